package queuetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/queue"
)

func testPing(t *testing.T, s *suite) {
	q := s.newQueue(t)
	require.NoError(t, q.Ping(t.Context()))
}

// testFIFOWithinGroup sends many messages of three groups, interleaved, and
// requires each group to come out in send order, each message once.
func testFIFOWithinGroup(t *testing.T, s *suite) {
	q := s.newQueue(t)
	const perGroup = 30
	groups := []string{"a", "b", "c"}
	var out []queue.OutMessage
	for i := range perGroup {
		for _, g := range groups {
			out = append(out, msg(g, i))
		}
	}
	send(t, q, out...)

	next := map[string]int{}
	for received := 0; received < len(out); {
		msgs := s.receiveSome(t, q, queue.MaxBatch, longVisibility)
		for _, m := range msgs {
			require.Equal(t, fmt.Sprintf("%s-%d", m.Group, next[m.Group]), string(m.Body), "group %s out of order", m.Group)
			require.Equal(t, 1, m.ReceiveCount)
			next[m.Group]++
			received++
		}
		deleteAll(t, q, msgs)
	}
	for _, g := range groups {
		require.Equal(t, perGroup, next[g], "group %s", g)
	}
	s.expectNone(t, q, 0)
}

// testOneInFlightPerGroup requires a group to stay locked while one of its
// messages is in flight, and to unlock on Delete.
func testOneInFlightPerGroup(t *testing.T, s *suite) {
	q := s.newQueue(t)
	send(t, q, msg("a", 0), msg("a", 1), msg("a", 2))

	first := s.receiveSome(t, q, 1, longVisibility)
	require.Equal(t, "a-0", string(first[0].Body))
	s.expectNone(t, q, s.f.pollWait())

	require.NoError(t, q.Delete(t.Context(), first[0].ReceiptHandle))
	second := s.receiveSome(t, q, 1, longVisibility)
	require.Equal(t, "a-1", string(second[0].Body))
	s.expectNone(t, q, 0)
}

// testGroupsIndependent requires another group's head to be receivable
// while a group is locked.
func testGroupsIndependent(t *testing.T, s *suite) {
	q := s.newQueue(t)
	send(t, q, msg("a", 0), msg("a", 1), msg("b", 0), msg("b", 1))

	first := s.receiveSome(t, q, 1, longVisibility)
	locked := first[0].Group
	require.Equal(t, locked+"-0", string(first[0].Body))
	other := map[string]string{"a": "b", "b": "a"}[locked]

	msgs := s.receiveSome(t, q, queue.MaxBatch, longVisibility)
	require.Equal(t, other+"-0", string(msgs[0].Body), "got %s", bodies(msgs))
	for _, m := range msgs {
		require.Equal(t, other, m.Group, "locked group %s delivered while in flight: %s", locked, bodies(msgs))
	}
}

// testConcurrentConsumers runs several consumers at once and requires per
// group order, exactly-once delivery (no visibility expiry happens) and never
// two messages of a group in flight.
func testConcurrentConsumers(t *testing.T, s *suite) {
	q := s.newQueue(t)
	const (
		consumers = 4
		perGroup  = 15
	)
	groups := []string{"a", "b", "c", "d", "e"}
	var out []queue.OutMessage
	for i := range perGroup {
		for _, g := range groups {
			out = append(out, msg(g, i))
		}
	}
	send(t, q, out...)

	var (
		mu       sync.Mutex
		inFlight = map[string]int{}
		next     = map[string]int{}
		received int
		problems []string
		wg       sync.WaitGroup
	)
	total := len(out)
	end := time.Now().Add(s.deadline())
	errs := make(chan error, consumers)
	for range consumers {
		wg.Go(func() {
			for {
				mu.Lock()
				done := received >= total || len(problems) > 0
				if !done && time.Now().After(end) {
					problems = append(problems, fmt.Sprintf("deadline passed with %d of %d received", received, total))
					done = true
				}
				mu.Unlock()
				if done {
					return
				}
				msgs, err := q.Receive(t.Context(), queue.ReceiveParams{Max: 3, Wait: s.f.pollWait(), Visibility: longVisibility})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for _, m := range msgs {
					if inFlight[m.Group] > 0 && !s.f.GroupBatch {
						problems = append(problems, fmt.Sprintf("%s received while group in flight", m.Body))
					}
					inFlight[m.Group]++
					if want := fmt.Sprintf("%s-%d", m.Group, next[m.Group]); want != string(m.Body) {
						problems = append(problems, fmt.Sprintf("got %s, want %s", m.Body, want))
					}
					next[m.Group]++
					received++
				}
				mu.Unlock()
				for _, m := range msgs {
					// Mark the message done before Delete: once Delete
					// returns another consumer may legitimately hold the
					// group's next message.
					mu.Lock()
					inFlight[m.Group]--
					mu.Unlock()
					if err := q.Delete(t.Context(), m.ReceiptHandle); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Empty(t, problems)
	require.Equal(t, total, received)
	s.expectNone(t, q, 0)
}

// testSendToBusyGroup requires a message sent to a group whose head is in
// flight to wait behind it, and the in-flight head not to come back.
func testSendToBusyGroup(t *testing.T, s *suite) {
	q := s.newQueue(t)
	send(t, q, msg("a", 0))
	first := s.receiveSome(t, q, 1, longVisibility)
	require.Equal(t, "a-0", string(first[0].Body))

	send(t, q, msg("a", 1), msg("b", 0))
	got := s.receiveSome(t, q, queue.MaxBatch, longVisibility)
	require.Equal(t, []string{"b-0"}, bodies(got), "group a is locked while a-0 is in flight")
	s.expectNone(t, q, s.f.pollWait())

	require.NoError(t, q.Delete(t.Context(), first[0].ReceiptHandle))
	next := s.receiveSome(t, q, queue.MaxBatch, longVisibility)
	require.Equal(t, []string{"a-1"}, bodies(next))
}
