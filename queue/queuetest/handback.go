package queuetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/queue"
)

// testExtendedOutlivesVisibility does what the router does while a delivery
// runs: it receives a message with a short visibility timeout and sets it
// back to that timeout every third of it. The message must stay hidden from
// another consumer for several times the original timeout, and come back
// (first in its group, with its next ReceiveCount) once the extensions stop.
func testExtendedOutlivesVisibility(t *testing.T, s *suite) {
	q := s.newQueue(t)
	send(t, q, msg("a", 0), msg("a", 1))
	v := s.f.shortVisibility()

	first := s.receiveSome(t, q, 1, v)
	require.Equal(t, "a-0", string(first[0].Body))

	// Extend in the background, as a held delivery does, until the other
	// consumer's wait below is over.
	ctx, cancel := context.WithCancel(t.Context())
	var (
		wg     sync.WaitGroup
		extErr error
	)
	wg.Go(func() {
		tick := time.NewTicker(v / 3)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if err := q.ChangeVisibility(ctx, first[0].ReceiptHandle, v); err != nil && ctx.Err() == nil {
					extErr = fmt.Errorf("extend visibility: %w", err)
					return
				}
			}
		}
	})

	// Another consumer long-polls for three original timeouts (or the
	// adapter's longest wait, the shorter); any extension missed lets a-0
	// (and only a-0: its group is locked) reappear and end the poll early.
	end := time.Now().Add(3 * v)
	for time.Now().Before(end) {
		wait := min(time.Until(end), s.f.maxWait())
		if wait <= 0 {
			break
		}
		got := s.receive(t, q, queue.ReceiveParams{Max: queue.MaxBatch, Wait: wait, Visibility: longVisibility})
		if len(got) > 0 {
			cancel()
			wg.Wait()
			require.Empty(t, got, "an extended message was received by another consumer: %s", bodies(got))
		}
	}
	cancel()
	wg.Wait()
	require.NoError(t, extErr)

	// Without extensions it comes back within one timeout, ahead of a-1.
	again := s.receiveSome(t, q, 1, longVisibility)
	require.Equal(t, "a-0", string(again[0].Body))
	require.Equal(t, first[0].ID, again[0].ID)
	require.Equal(t, 2, again[0].ReceiveCount)
}

// testHandBackReceivedAtOnce does what the router does on SIGTERM: it hands
// back (visibility 0) every message it received but did not start, here the
// heads of three groups received with a long visibility timeout. Each
// Receive that follows must return at least one of them — none waits for
// the timeout — until all are back, each ahead of the later messages of its
// group and with its next ReceiveCount.
func testHandBackReceivedAtOnce(t *testing.T, s *suite) {
	q := s.newQueue(t)
	groups := []string{"a", "b", "c"}
	out := make([]queue.OutMessage, 0, 2*len(groups))
	for _, g := range groups {
		out = append(out, msg(g, 0), msg(g, 1))
	}
	send(t, q, out...)

	// Receive until the head of every group is held (an adapter with
	// GroupBatch may hand out a group's second message with its head).
	held := map[string]queue.Message{}
	heads := 0
	for heads < len(groups) {
		for _, m := range s.receiveSome(t, q, queue.MaxBatch, longVisibility) {
			require.NotContains(t, held, string(m.Body))
			held[string(m.Body)] = m
			if string(m.Body) == m.Group+"-0" {
				heads++
			}
		}
	}
	// Hand back the second messages first, so that order on the queue
	// cannot depend on the order of the hand-backs.
	for _, body := range []string{"a-1", "b-1", "c-1", "a-0", "b-0", "c-0"} {
		if m, ok := held[body]; ok {
			require.NoError(t, q.ChangeVisibility(t.Context(), m.ReceiptHandle, 0), "hand back %s", body)
		}
	}

	back := map[string]int{}
	lastOf := map[string]int{}
	for calls := 0; len(back) < len(held); calls++ {
		require.Less(t, calls, 2*len(out), "handed-back messages still missing after %d receives: got %v of %d", calls, back, len(held))
		got := s.receive(t, q, queue.ReceiveParams{Max: queue.MaxBatch, Wait: s.f.pollWait(), Visibility: longVisibility})
		require.NotEmpty(t, got, "a Receive after the hand-back returned nothing: got %v of %d back so far", back, len(held))
		for _, m := range got {
			var i int
			_, err := fmt.Sscanf(string(m.Body)[len(m.Group)+1:], "%d", &i)
			require.NoError(t, err)
			prev, seen := lastOf[m.Group]
			require.True(t, !seen && i == 0 || seen && i == prev+1, "group %s out of order: %s after %d", m.Group, m.Body, prev)
			lastOf[m.Group] = i
			if h, ok := held[string(m.Body)]; ok {
				require.Equal(t, h.ID, m.ID)
				require.Equal(t, 2, m.ReceiveCount, "%s", m.Body)
				back[string(m.Body)]++
			} else {
				require.Equal(t, 1, m.ReceiveCount, "%s", m.Body)
			}
			require.NoError(t, q.Delete(t.Context(), m.ReceiptHandle))
		}
	}
}
