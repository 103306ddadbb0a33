package pull

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWorkerRegistryIsBounded: client-chosen worker ids cannot grow the
// registry past workersMax; the longest silent worker goes first.
func TestWorkerRegistryIsBounded(t *testing.T) {
	t.Parallel()
	r := newWorkerRegistry()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range workersMax + 100 {
		r.touch(fmt.Sprintf("w-%d", i), start.Add(time.Duration(i)*time.Millisecond))
	}
	seen := r.since(start)
	require.Len(t, seen, workersMax)
	require.NotContains(t, seen, "w-0", "the longest silent worker was forgotten")
	require.Contains(t, seen, fmt.Sprintf("w-%d", workersMax+99))
}
