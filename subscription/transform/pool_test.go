package transform

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The pool hands out the runtime put back last, and holds no more than its
// size.
func TestPoolTakesTheLastPutBack(t *testing.T) {
	t.Parallel()
	p := newPool(2)
	require.Nil(t, p.take())
	a, b, c := &sandbox{}, &sandbox{}, &sandbox{}
	require.True(t, p.put(a))
	require.True(t, p.put(b))
	require.False(t, p.put(c), "full")
	require.Same(t, b, p.take())
	require.True(t, p.put(c))
	require.Same(t, c, p.take())
	require.Same(t, a, p.take())
	require.Nil(t, p.take())
}

// Runs one after another reuse one runtime, though the pool has room for
// more: the one used last.
func TestRunReusesTheLastRuntime(t *testing.T) {
	t.Parallel()
	e := testEngine(Config{PoolSize: 4})
	prog, err := Compile(`function handler(w) { return {payload: w.attempt} }`)
	require.NoError(t, err)
	first, err := newSandbox(e.maxLen, e.maxStr)
	require.NoError(t, err)
	require.True(t, e.idle.put(first))
	_, err = e.Run(t.Context(), prog, sampleInput())
	require.NoError(t, err)
	last := e.idle.take()
	require.Same(t, first, last)
	other, err := newSandbox(e.maxLen, e.maxStr)
	require.NoError(t, err)
	require.True(t, e.idle.put(other))
	require.True(t, e.idle.put(last))
	for range 4 { // a queue would have handed out other for the first and third
		_, err = e.Run(t.Context(), prog, sampleInput())
		require.NoError(t, err)
	}
	require.Same(t, last, e.idle.take(), "the runtime used last serves the next run")
	require.Same(t, other, e.idle.take())
}
