package router

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRetryDelayBacksOff(t *testing.T) {
	t.Parallel()
	var got []time.Duration
	for n := range 7 {
		got = append(got, retryDelay(n, time.Minute))
	}
	require.Equal(t, []time.Duration{time.Second, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second, 8 * time.Second}, got)
	require.Equal(t, retryDelayMax, retryDelay(1000, time.Minute), "no overflow")
	require.Equal(t, 5*time.Second, retryDelay(5, 5*time.Second), "at most the lease")
}
