package ui

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestScriptsInNode runs the unit checks of the dashboard's scripts that
// need no browser (e2e/unit.mjs): the SSE parser, the stream client's
// reconnect with Last-Event-ID against a real HTTP server, the rate
// counters and the lane logic.
func TestScriptsInNode(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node not found: install Node.js (the dashboard's script tests need it)")
	// Reading the script lets go test's cache see its changes (the
	// modules it imports are embedded, so the cache sees those already).
	_, err = os.ReadFile("e2e/unit.mjs")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "e2e/unit.mjs")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	require.NoError(t, err, "unit.mjs failed")
	require.Contains(t, string(out), "passed", "no summary line")
}
