package transform

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A pooled runtime's runs share one goroutine while they come in a stream,
// and the goroutine ends once the runtime has been idle for its linger.
func TestRunReusesItsWorker(t *testing.T) {
	t.Parallel()
	e := testEngine(Config{PoolSize: 1})
	prog, err := Compile(`function handler(w) { return {payload: w.attempt} }`)
	require.NoError(t, err)
	var sb *sandbox
	for i := range 3 {
		_, err := e.Run(t.Context(), prog, sampleInput())
		require.NoError(t, err)
		got := e.idle.take()
		if i == 0 {
			sb = got
		}
		require.Same(t, sb, got, "one pooled runtime")
		require.Equal(t, workerIdle, got.state.Load(), "its worker waits for the next run")
		require.True(t, e.idle.put(got))
	}
	require.Eventually(t, func() bool { return sb.state.Load() == workerNone }, 10*time.Second, 5*time.Millisecond,
		"the worker ends after its linger")
	_, err = e.Run(t.Context(), prog, sampleInput())
	require.NoError(t, err, "a new worker runs the next run")
	require.Equal(t, workerIdle, sb.state.Load())
}
