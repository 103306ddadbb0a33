package memqueue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch/clocktest"
	"github.com/hooklane/hooklane/queue"
	"github.com/hooklane/hooklane/queue/memqueue"
)

type testBundle struct {
	q     *memqueue.Queue
	clock *clocktest.Clock
}

func setup(t *testing.T, cfg memqueue.Config) *testBundle {
	t.Helper()
	c := clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	cfg.NowFunc = c.Now
	q := memqueue.New(cfg)
	t.Cleanup(func() { _ = q.Close() })
	return &testBundle{q: q, clock: c}
}

func out(group, dedupID, body string) queue.OutMessage {
	return queue.OutMessage{Group: group, DedupID: dedupID, Body: []byte(body)}
}

func sendAll(t *testing.T, q *memqueue.Queue, msgs ...queue.OutMessage) {
	t.Helper()
	res, err := q.SendBatch(t.Context(), msgs)
	require.NoError(t, err)
	for i, r := range res {
		require.NoError(t, r.Err, "entry %d", i)
	}
}

func receiveNow(t *testing.T, q *memqueue.Queue, maxMsgs int, visibility time.Duration) []queue.Message {
	t.Helper()
	msgs, err := q.Receive(t.Context(), queue.ReceiveParams{Max: maxMsgs, Visibility: visibility})
	require.NoError(t, err)
	return msgs
}

func bodiesOf(msgs []queue.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Body)
	}
	return out
}

func TestVisibilityExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t, memqueue.Config{VisibilityTimeout: 10 * time.Second})
	sendAll(t, b.q, out("a", "1", "a1"), out("a", "2", "a2"))

	first := receiveNow(t, b.q, 1, 0) // default visibility, 10 s
	require.Equal(t, []string{"a1"}, bodiesOf(first))

	b.clock.Advance(10*time.Second - time.Nanosecond)
	require.Empty(t, receiveNow(t, b.q, 10, 0))
	require.Equal(t, 1, b.q.Stats().InFlight)

	b.clock.Advance(time.Nanosecond)
	again := receiveNow(t, b.q, 10, 0)
	require.Equal(t, []string{"a1"}, bodiesOf(again))
	require.Equal(t, 2, again[0].ReceiveCount)
	require.ErrorIs(t, b.q.Delete(t.Context(), first[0].ReceiptHandle), queue.ErrInvalidReceipt)

	require.NoError(t, b.q.Delete(t.Context(), again[0].ReceiptHandle))
	next := receiveNow(t, b.q, 10, 0)
	require.Equal(t, []string{"a2"}, bodiesOf(next))
	require.Equal(t, 1, next[0].ReceiveCount)
}

func TestExpiredHandleRejectedBeforeRedelivery(t *testing.T) {
	t.Parallel()
	b := setup(t, memqueue.Config{})
	sendAll(t, b.q, out("a", "1", "a1"))
	got := receiveNow(t, b.q, 1, time.Second)
	b.clock.Advance(time.Second)
	// The timeout passed: the handle is spent even though nobody has
	// received the message again yet, and the message stays.
	require.ErrorIs(t, b.q.Delete(t.Context(), got[0].ReceiptHandle), queue.ErrInvalidReceipt)
	require.ErrorIs(t, b.q.ChangeVisibility(t.Context(), got[0].ReceiptHandle, time.Minute), queue.ErrInvalidReceipt)
	require.Equal(t, memqueue.Stats{Messages: 1, Groups: 1, DedupIDs: 1}, b.q.Stats())
	require.Equal(t, []string{"a1"}, bodiesOf(receiveNow(t, b.q, 1, 0)))
}

func TestChangeVisibility(t *testing.T) {
	t.Parallel()
	b := setup(t, memqueue.Config{})
	sendAll(t, b.q, out("a", "1", "a1"))
	got := receiveNow(t, b.q, 1, 5*time.Second)

	require.NoError(t, b.q.ChangeVisibility(t.Context(), got[0].ReceiptHandle, time.Minute))
	b.clock.Advance(59 * time.Second)
	require.Empty(t, receiveNow(t, b.q, 1, 0))

	// Shortening works too.
	require.NoError(t, b.q.ChangeVisibility(t.Context(), got[0].ReceiptHandle, time.Second))
	b.clock.Advance(time.Second)
	again := receiveNow(t, b.q, 1, 0)
	require.Equal(t, []string{"a1"}, bodiesOf(again))

	require.NoError(t, b.q.ChangeVisibility(t.Context(), again[0].ReceiptHandle, 0))
	require.ErrorIs(t, b.q.Delete(t.Context(), again[0].ReceiptHandle), queue.ErrInvalidReceipt)
	third := receiveNow(t, b.q, 1, 0)
	require.Equal(t, 3, third[0].ReceiveCount)

	require.Error(t, b.q.ChangeVisibility(t.Context(), third[0].ReceiptHandle, -time.Second))
}

func TestDedupWindow(t *testing.T) {
	t.Parallel()
	b := setup(t, memqueue.Config{DedupWindow: time.Minute})
	sendAll(t, b.q, out("a", "d1", "first"))
	got := receiveNow(t, b.q, 1, 0)
	require.NoError(t, b.q.Delete(t.Context(), got[0].ReceiptHandle))

	b.clock.Advance(time.Minute - time.Nanosecond)
	sendAll(t, b.q, out("a", "d1", "suppressed"))
	require.Empty(t, receiveNow(t, b.q, 1, 0))
	require.Equal(t, 1, b.q.Stats().DedupIDs)

	b.clock.Advance(time.Nanosecond)
	sendAll(t, b.q, out("b", "d2", "other"))
	require.Equal(t, 1, b.q.Stats().DedupIDs, "d1's entry is pruned once its window ends")
	sendAll(t, b.q, out("a", "d1", "second"))
	require.ElementsMatch(t, []string{"other", "second"}, bodiesOf(receiveNow(t, b.q, 10, 0)))

	// The resend opened a fresh window for d1.
	b.clock.Advance(time.Minute - time.Nanosecond)
	sendAll(t, b.q, out("c", "d1", "suppressed again"))
	require.Equal(t, 2, b.q.Stats().Messages)
}

func TestDedupIsQueueWide(t *testing.T) {
	t.Parallel()
	b := setup(t, memqueue.Config{})
	sendAll(t, b.q, out("a", "d1", "a"), out("b", "d1", "b"))
	require.Equal(t, []string{"a"}, bodiesOf(receiveNow(t, b.q, 10, 0)))
}

func TestRoundRobinAcrossGroups(t *testing.T) {
	t.Parallel()
	b := setup(t, memqueue.Config{})
	// Group a is sent first and has the most messages; it must not starve b
	// and c.
	var msgs []queue.OutMessage
	for i := range 6 {
		msgs = append(msgs, out("a", "a"+string(rune('0'+i)), "a"+string(rune('0'+i))))
	}
	sendAll(t, b.q, msgs...)
	sendAll(t, b.q, out("b", "b0", "b0"), out("b", "b1", "b1"), out("c", "c0", "c0"))

	var order []string
	for {
		got := receiveNow(t, b.q, 1, 0)
		if len(got) == 0 {
			break
		}
		order = append(order, string(got[0].Body))
		require.NoError(t, b.q.Delete(t.Context(), got[0].ReceiptHandle))
	}
	require.Equal(t, []string{"a0", "b0", "c0", "a1", "b1", "a2", "a3", "a4", "a5"}, order)
	require.Equal(t, memqueue.Stats{DedupIDs: 9}, b.q.Stats(), "empty groups are dropped")
}

func TestReturnedMessageRejoinsRotation(t *testing.T) {
	t.Parallel()
	b := setup(t, memqueue.Config{})
	sendAll(t, b.q, out("a", "a0", "a0"), out("b", "b0", "b0"), out("c", "c0", "c0"))
	a := receiveNow(t, b.q, 1, time.Second)
	require.Equal(t, []string{"a0"}, bodiesOf(a))
	b.clock.Advance(time.Second)
	// a0 came back after b and c were already waiting.
	require.Equal(t, []string{"b0", "c0", "a0"}, bodiesOf(receiveNow(t, b.q, 10, 0)))
}

func TestSendBatchValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		msg     queue.OutMessage
		wantErr string
	}{
		{"NoGroup", queue.OutMessage{DedupID: "d", Body: []byte("x")}, "group is required"},
		{"NoDedupID", queue.OutMessage{Group: "g", Body: []byte("x")}, "dedup id is required"},
		{"BodyTooLarge", queue.OutMessage{Group: "g", DedupID: "d", Body: make([]byte, memqueue.MaxBodySize+1)}, "exceeds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, memqueue.Config{})
			ok := out("ok", "ok", "ok")
			res, err := b.q.SendBatch(t.Context(), []queue.OutMessage{ok, tt.msg, ok})
			require.NoError(t, err)
			require.Len(t, res, 3)
			require.NoError(t, res[0].Err)
			require.ErrorContains(t, res[1].Err, tt.wantErr)
			require.NoError(t, res[2].Err)
			require.Equal(t, 1, b.q.Stats().Messages)
		})
	}
}

func TestBodyIsCopied(t *testing.T) {
	t.Parallel()
	b := setup(t, memqueue.Config{})
	body := []byte("original")
	sendAll(t, b.q, queue.OutMessage{Group: "a", DedupID: "1", Body: body})
	copy(body, "mutated!")
	require.Equal(t, []string{"original"}, bodiesOf(receiveNow(t, b.q, 1, 0)))
}

func TestReceiveParamsValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    queue.ReceiveParams
	}{
		{"MaxZero", queue.ReceiveParams{Max: 0}},
		{"MaxAboveBatch", queue.ReceiveParams{Max: queue.MaxBatch + 1}},
		{"NegativeVisibility", queue.ReceiveParams{Max: 1, Visibility: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, memqueue.Config{})
			_, err := b.q.Receive(t.Context(), tt.p)
			require.Error(t, err)
		})
	}
}

func TestCloseWakesWaitersAndRejectsCalls(t *testing.T) {
	t.Parallel()
	b := setup(t, memqueue.Config{})
	sendAll(t, b.q, out("a", "1", "a1"))
	held := receiveNow(t, b.q, 1, 0)

	const waiters = 3
	errs := make(chan error, waiters)
	for range waiters {
		go func() {
			_, err := b.q.Receive(context.Background(), queue.ReceiveParams{Max: 1, Wait: 20 * time.Second})
			errs <- err
		}()
	}
	require.Eventually(t, func() bool { return waitingReceivers(b.q) == waiters }, 30*time.Second, time.Millisecond)
	require.NoError(t, b.q.Close())
	for range waiters {
		require.ErrorIs(t, <-errs, queue.ErrClosed)
	}

	require.NoError(t, b.q.Close())
	_, err := b.q.SendBatch(t.Context(), []queue.OutMessage{out("a", "2", "a2")})
	require.ErrorIs(t, err, queue.ErrClosed)
	_, err = b.q.Receive(t.Context(), queue.ReceiveParams{Max: 1})
	require.ErrorIs(t, err, queue.ErrClosed)
	require.ErrorIs(t, b.q.Delete(t.Context(), held[0].ReceiptHandle), queue.ErrClosed)
	require.ErrorIs(t, b.q.ChangeVisibility(t.Context(), held[0].ReceiptHandle, 0), queue.ErrClosed)
	require.ErrorIs(t, b.q.Ping(t.Context()), queue.ErrClosed)
}

// waitingReceivers reports how many Receive calls are long-polling.
func waitingReceivers(q *memqueue.Queue) int { return q.Stats().Waiters }

func TestEveryWaiterWokenBySend(t *testing.T) {
	t.Parallel()
	b := setup(t, memqueue.Config{})
	const waiters = 5
	got := make(chan []queue.Message, waiters)
	errs := make(chan error, waiters)
	for range waiters {
		go func() {
			msgs, err := b.q.Receive(t.Context(), queue.ReceiveParams{Max: 1, Wait: 20 * time.Second})
			errs <- err
			got <- msgs
		}()
	}
	require.Eventually(t, func() bool { return waitingReceivers(b.q) == waiters }, 30*time.Second, time.Millisecond)
	var msgs []queue.OutMessage
	for _, g := range []string{"a", "b", "c", "d", "e"} {
		msgs = append(msgs, out(g, g, g))
	}
	sendAll(t, b.q, msgs...)

	var all []string
	for range waiters {
		require.NoError(t, <-errs)
		m := <-got
		require.Len(t, m, 1)
		all = append(all, string(m[0].Body))
	}
	require.ElementsMatch(t, []string{"a", "b", "c", "d", "e"}, all)
}

func TestWaiterWokenByDelete(t *testing.T) {
	t.Parallel()
	b := setup(t, memqueue.Config{})
	sendAll(t, b.q, out("a", "1", "a1"), out("a", "2", "a2"))
	first := receiveNow(t, b.q, 1, 0)

	got := make(chan []queue.Message, 1)
	go func() {
		msgs, _ := b.q.Receive(t.Context(), queue.ReceiveParams{Max: 1, Wait: 20 * time.Second})
		got <- msgs
	}()
	require.Eventually(t, func() bool { return waitingReceivers(b.q) == 1 }, 30*time.Second, time.Millisecond)
	require.NoError(t, b.q.Delete(t.Context(), first[0].ReceiptHandle))
	require.Equal(t, []string{"a2"}, bodiesOf(<-got))
}

func TestWaiterWokenByVisibilityExpiry(t *testing.T) {
	t.Parallel()
	// Real clock: the waiter's timer runs on real time.
	q := memqueue.New(memqueue.Config{})
	t.Cleanup(func() { _ = q.Close() })
	sendAll(t, q, out("a", "1", "a1"))
	first := receiveNow(t, q, 1, 100*time.Millisecond)

	msgs, err := q.Receive(t.Context(), queue.ReceiveParams{Max: 1, Wait: 20 * time.Second})
	require.NoError(t, err)
	require.Equal(t, []string{"a1"}, bodiesOf(msgs))
	require.Equal(t, first[0].ID, msgs[0].ID)
	require.Equal(t, 2, msgs[0].ReceiveCount)
}

func TestCancelledWaiterPassesWakeOn(t *testing.T) {
	t.Parallel()
	b := setup(t, memqueue.Config{})
	ctx, cancel := context.WithCancel(t.Context())
	cancelled := make(chan error, 1)
	go func() {
		_, err := b.q.Receive(ctx, queue.ReceiveParams{Max: 1, Wait: 20 * time.Second})
		cancelled <- err
	}()
	require.Eventually(t, func() bool { return waitingReceivers(b.q) == 1 }, 30*time.Second, time.Millisecond)
	got := make(chan []queue.Message, 1)
	go func() {
		msgs, _ := b.q.Receive(t.Context(), queue.ReceiveParams{Max: 1, Wait: 20 * time.Second})
		got <- msgs
	}()
	require.Eventually(t, func() bool { return waitingReceivers(b.q) == 2 }, 30*time.Second, time.Millisecond)

	// Send wakes the first waiter, which is being cancelled at the same
	// time; the message must still reach the second one.
	cancel()
	sendAll(t, b.q, out("a", "1", "a1"))
	require.ErrorIs(t, <-cancelled, context.Canceled)
	require.Equal(t, []string{"a1"}, bodiesOf(<-got))
}

func TestReceiveWaitTimesOutEmpty(t *testing.T) {
	t.Parallel()
	b := setup(t, memqueue.Config{})
	msgs, err := b.q.Receive(t.Context(), queue.ReceiveParams{Max: 1, Wait: 50 * time.Millisecond})
	require.NoError(t, err)
	require.Empty(t, msgs)
	require.Equal(t, 0, waitingReceivers(b.q))
}

func TestStatsCountsMessages(t *testing.T) {
	t.Parallel()
	b := setup(t, memqueue.Config{})
	sendAll(t, b.q, out("a", "1", "a1"), out("a", "2", "a2"), out("b", "3", strings.Repeat("b", 10)))
	receiveNow(t, b.q, 10, 0)
	require.Equal(t, memqueue.Stats{Messages: 3, InFlight: 2, Groups: 2, DedupIDs: 3}, b.q.Stats())
}

func TestWaiterWokenByShortenedVisibility(t *testing.T) {
	t.Parallel()
	q := memqueue.New(memqueue.Config{})
	t.Cleanup(func() { _ = q.Close() })
	sendAll(t, q, out("a", "1", "a1"))
	held := receiveNow(t, q, 1, time.Minute)

	got := make(chan []queue.Message, 1)
	go func() {
		// A Receive whose wait ends takes what is receivable by then;
		// ending it by ctx instead proves it was woken early.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		msgs, _ := q.Receive(ctx, queue.ReceiveParams{Max: 1, Wait: 20 * time.Second})
		got <- msgs
	}()
	require.Eventually(t, func() bool { return q.Stats().Waiters == 1 }, 30*time.Second, time.Millisecond)
	// The waiter planned to sleep until the 1-minute expiry.
	require.NoError(t, q.ChangeVisibility(t.Context(), held[0].ReceiptHandle, 50*time.Millisecond))
	msgs := <-got
	require.Equal(t, []string{"a1"}, bodiesOf(msgs), "the waiter must notice the sooner expiry")
	require.Equal(t, 2, msgs[0].ReceiveCount)
}

func TestWaiterWokenByNewEarliestExpiry(t *testing.T) {
	t.Parallel()
	q := memqueue.New(memqueue.Config{})
	t.Cleanup(func() { _ = q.Close() })

	type result struct {
		msgs []queue.Message
		err  error
	}
	first, second := make(chan result, 1), make(chan result, 1)
	go func() {
		msgs, err := q.Receive(t.Context(), queue.ReceiveParams{Max: 1, Wait: 20 * time.Second, Visibility: 50 * time.Millisecond})
		first <- result{msgs, err}
	}()
	require.Eventually(t, func() bool { return q.Stats().Waiters == 1 }, 30*time.Second, time.Millisecond)
	go func() {
		// Ended by ctx, not by its wait, so only an early wake-up passes.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		msgs, err := q.Receive(ctx, queue.ReceiveParams{Max: 1, Wait: 20 * time.Second, Visibility: time.Minute})
		second <- result{msgs, err}
	}()
	require.Eventually(t, func() bool { return q.Stats().Waiters == 2 }, 30*time.Second, time.Millisecond)

	// Waiters are served first come first served: the first takes a1 for
	// 50 ms. The second, asleep with no expiry in sight, must wake for it.
	sendAll(t, q, out("a", "1", "a1"))
	r := <-first
	require.NoError(t, r.err)
	require.Equal(t, []string{"a1"}, bodiesOf(r.msgs))
	r = <-second
	require.NoError(t, r.err)
	require.Equal(t, []string{"a1"}, bodiesOf(r.msgs))
	require.Equal(t, 2, r.msgs[0].ReceiveCount)
}

func TestNewPanicsOnNegativeDurations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  memqueue.Config
	}{
		{"VisibilityTimeout", memqueue.Config{VisibilityTimeout: -time.Second}},
		{"DedupWindow", memqueue.Config{DedupWindow: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Panics(t, func() { memqueue.New(tt.cfg) })
		})
	}
}
