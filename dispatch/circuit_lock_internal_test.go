package dispatch

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A subscription's circuit lock is held by one at a time, a waiter gives
// up with its context, other subscriptions are not held by it, and the
// last one out leaves nothing behind.
func TestCircuitLocks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cl := newCircuitLocks()
	unlock, err := cl.lock(ctx, "sub-1")
	require.NoError(t, err)

	other, err := cl.lock(ctx, "sub-2")
	require.NoError(t, err, "another subscription's lock is free")
	other()

	waitCtx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = cl.lock(waitCtx, "sub-1")
	require.ErrorIs(t, err, context.DeadlineExceeded, "held: the waiter gives up with its context")

	got := make(chan func())
	go func() {
		u, err := cl.lock(ctx, "sub-1")
		if err != nil {
			close(got)
			return
		}
		got <- u
	}()
	select {
	case <-got:
		t.Fatal("a second holder while the first holds the lock")
	case <-time.After(50 * time.Millisecond): // a bounded look for a wrong early acquisition
	}
	unlock()
	second, ok := <-got
	require.True(t, ok, "the waiter takes the lock once it is released")
	second()

	cl.mu.Lock()
	defer cl.mu.Unlock()
	require.Empty(t, cl.m, "no lock is left once nobody holds or waits")
}
