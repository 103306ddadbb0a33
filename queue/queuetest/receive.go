package queuetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/queue"
)

// testReceiveMax requires Receive to return at most Max messages and to
// reject a Max above queue.MaxBatch.
func testReceiveMax(t *testing.T, s *suite) {
	q := s.newQueue(t)
	const groups = queue.MaxBatch
	out := make([]queue.OutMessage, groups)
	for i := range out {
		out[i] = msg(fmt.Sprintf("g%d", i), 0)
	}
	send(t, q, out...)

	_, err := q.Receive(t.Context(), queue.ReceiveParams{Max: queue.MaxBatch + 1, Visibility: longVisibility})
	require.Error(t, err)

	seen := map[string]bool{}
	for _, maxMsgs := range []int{1, 3} {
		got := s.receiveSome(t, q, maxMsgs, longVisibility)
		for _, m := range got {
			seen[string(m.Body)] = true
		}
	}
	for len(seen) < groups {
		for _, m := range s.receiveSome(t, q, queue.MaxBatch, longVisibility) {
			require.False(t, seen[string(m.Body)], "%s received twice", m.Body)
			seen[string(m.Body)] = true
		}
	}
	s.expectNone(t, q, 0)
}

// testLongPollWakesOnSend requires a waiting Receive to get a message sent
// while it waits.
func testLongPollWakesOnSend(t *testing.T, s *suite) {
	q := s.newQueue(t)
	s.expectNone(t, q, 0)

	type result struct {
		msgs []queue.Message
		err  error
	}
	done := make(chan result, 1)
	go func() {
		msgs, err := q.Receive(t.Context(), queue.ReceiveParams{Max: 1, Wait: min(s.f.maxWait(), 10*time.Second), Visibility: longVisibility})
		done <- result{msgs, err}
	}()
	// Give the Receive time to start waiting; there is no signal for it.
	// Sending earlier would still pass, only test less.
	select {
	case r := <-done:
		require.FailNow(t, "Receive returned before anything was sent", "%v %v", r.msgs, r.err)
	case <-time.After(200 * time.Millisecond):
	}
	send(t, q, msg("a", 0))
	r := <-done
	require.NoError(t, r.err)
	require.Len(t, r.msgs, 1)
	require.Equal(t, "a-0", string(r.msgs[0].Body))
}

// testReceiveCancelled requires cancelling ctx to end a waiting Receive with
// the context's error.
func testReceiveCancelled(t *testing.T, s *suite) {
	q := s.newQueue(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	timer := time.AfterFunc(200*time.Millisecond, cancel)
	defer timer.Stop()
	msgs, err := q.Receive(ctx, queue.ReceiveParams{Max: 1, Wait: s.f.maxWait(), Visibility: longVisibility})
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, msgs)

	// A pre-cancelled Receive fails too, even with no wait.
	_, err = q.Receive(ctx, queue.ReceiveParams{Max: 1, Visibility: longVisibility})
	require.ErrorIs(t, err, context.Canceled)
}
