package bench

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClientMatchMicrosMatches(t *testing.T) {
	t.Parallel()
	require.Positive(t, clientMatchMicros(3), "an event of a client matches the anchor-level subscription and its client's")
}
