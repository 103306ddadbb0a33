package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hooklane/hooklane/queue"
	"github.com/hooklane/hooklane/queue/memqueue"
	"github.com/hooklane/hooklane/queue/queuetest"
)

var _ queue.Queue = (*queue.Batcher)(nil)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestBatcherConformance(t *testing.T) {
	t.Parallel()
	for _, linger := range []time.Duration{time.Millisecond, -1} {
		t.Run(fmt.Sprintf("linger %s", linger), func(t *testing.T) {
			t.Parallel()
			queuetest.Run(t, queuetest.Features{
				DedupWindow:           2 * time.Second,
				VisibilityGranularity: 250 * time.Millisecond,
				MaxWait:               memqueue.MaxWait,
			}, func(t *testing.T) queue.Queue {
				t.Helper()
				q := memqueue.New(memqueue.Config{DedupWindow: 2 * time.Second})
				t.Cleanup(func() { _ = q.Close() })
				return queue.NewBatcher(q, queue.BatcherConfig{Linger: linger})
			})
		})
	}
}

// countingQueue records the sizes of the batch calls that reach the queue,
// and fails them as told.
type countingQueue struct {
	queue.Queue

	mu      sync.Mutex
	sends   []int
	deletes []int
	fail    error
}

func (c *countingQueue) SendBatch(ctx context.Context, msgs []queue.OutMessage) ([]queue.SendResult, error) {
	c.mu.Lock()
	c.sends = append(c.sends, len(msgs))
	fail := c.fail
	c.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	return c.Queue.SendBatch(ctx, msgs)
}

func (c *countingQueue) DeleteBatch(ctx context.Context, handles []string) ([]error, error) {
	c.mu.Lock()
	c.deletes = append(c.deletes, len(handles))
	fail := c.fail
	c.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	return c.Queue.DeleteBatch(ctx, handles)
}

func (c *countingQueue) calls() (sends, deletes []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int(nil), c.sends...), append([]int(nil), c.deletes...)
}

func newCounting(t *testing.T) *countingQueue {
	t.Helper()
	q := memqueue.New(memqueue.Config{})
	t.Cleanup(func() { _ = q.Close() })
	return &countingQueue{Queue: q}
}

// together runs fn(i) for i in [0, n) concurrently and waits for all.
func together(n int, fn func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { fn(i) })
	}
	wg.Wait()
}

// receiveAll receives until n messages are in hand.
func receiveAll(t *testing.T, q queue.Queue, n int) []queue.Message {
	t.Helper()
	var got []queue.Message
	for len(got) < n {
		msgs, err := q.Receive(t.Context(), queue.ReceiveParams{Max: queue.MaxBatch, Wait: time.Second, Visibility: time.Minute})
		require.NoError(t, err)
		require.NotEmpty(t, msgs, "messages missing: %d of %d received", len(got), n)
		got = append(got, msgs...)
	}
	return got
}

// A full batch goes at once, whatever the linger: ten concurrent callers
// of one entry each share one call, for sends and for deletes.
func TestBatcherFullBatchSharesOneCall(t *testing.T) {
	t.Parallel()
	cq := newCounting(t)
	b := queue.NewBatcher(cq, queue.BatcherConfig{Linger: time.Hour})
	together(queue.MaxBatch, func(i int) {
		g := fmt.Sprintf("g%d", i)
		res, err := b.SendBatch(t.Context(), []queue.OutMessage{{Group: g, DedupID: g, Body: []byte(g)}})
		require.NoError(t, err)
		require.Len(t, res, 1)
		require.NoError(t, res[0].Err)
	})
	got := receiveAll(t, b, queue.MaxBatch)
	together(queue.MaxBatch, func(i int) {
		require.NoError(t, b.Delete(t.Context(), got[i].ReceiptHandle))
	})
	sends, deletes := cq.calls()
	require.Equal(t, []int{queue.MaxBatch}, sends)
	require.Equal(t, []int{queue.MaxBatch}, deletes)
}

// Callers' entries are never split: a caller that does not fit pushes the
// pending batch out and starts the next, and each caller's messages keep
// their order.
func TestBatcherKeepsEachCallerWhole(t *testing.T) {
	t.Parallel()
	cq := newCounting(t)
	b := queue.NewBatcher(cq, queue.BatcherConfig{Linger: 50 * time.Millisecond})
	const callers, each = 4, 3
	together(callers, func(i int) {
		msgs := make([]queue.OutMessage, each)
		for k := range msgs {
			body := fmt.Sprintf("c%d-%d", i, k)
			msgs[k] = queue.OutMessage{Group: fmt.Sprintf("c%d", i), DedupID: body, Body: []byte(body)}
		}
		res, err := b.SendBatch(t.Context(), msgs)
		require.NoError(t, err)
		require.Len(t, res, each)
	})
	sends, _ := cq.calls()
	require.Equal(t, []int{9, 3}, sends, "three callers fill 9 of 10; the fourth starts the next batch")
	next := map[string]int{}
	for range callers * each {
		msgs, err := cq.Receive(t.Context(), queue.ReceiveParams{Max: 1, Wait: time.Second, Visibility: time.Minute})
		require.NoError(t, err)
		require.Len(t, msgs, 1)
		got := msgs[0]
		require.Equal(t, fmt.Sprintf("%s-%d", got.Group, next[got.Group]), string(got.Body), "caller's order broken")
		next[got.Group]++
		require.NoError(t, cq.Delete(t.Context(), got.ReceiptHandle))
	}
}

// Each caller gets the results of its own entries, and a failed shared
// call fails every caller in it.
func TestBatcherAnswersEachCaller(t *testing.T) {
	t.Parallel()
	cq := newCounting(t)
	b := queue.NewBatcher(cq, queue.BatcherConfig{Linger: time.Hour})
	msgs := make([]queue.OutMessage, 5)
	for i := range msgs {
		g := fmt.Sprintf("g%d", i)
		msgs[i] = queue.OutMessage{Group: g, DedupID: g, Body: []byte(g)}
	}
	res, err := cq.SendBatch(t.Context(), msgs) // straight to the queue: a lone caller would wait the hour
	require.NoError(t, err)
	require.Len(t, res, 5)
	got := receiveAll(t, b, 5)

	errs := make([]error, queue.MaxBatch)
	together(queue.MaxBatch, func(i int) {
		h := "not-a-receipt-handle"
		if i%2 == 0 {
			h = got[i/2].ReceiptHandle
		}
		errs[i] = b.Delete(t.Context(), h)
	})
	for i, err := range errs {
		if i%2 == 0 {
			require.NoError(t, err, "caller %d", i)
		} else {
			require.ErrorIs(t, err, queue.ErrInvalidReceipt, "caller %d", i)
		}
	}
	sends, deletes := cq.calls()
	require.Equal(t, []int{5}, sends)
	require.Equal(t, []int{queue.MaxBatch}, deletes)

	down := errors.New("queue down")
	cq.mu.Lock()
	cq.fail = down
	cq.mu.Unlock()
	together(queue.MaxBatch, func(i int) {
		g := fmt.Sprintf("x%d", i)
		_, err := b.SendBatch(t.Context(), []queue.OutMessage{{Group: g, DedupID: g, Body: []byte(g)}})
		require.ErrorIs(t, err, down)
	})
}

// A lone caller is answered after the linger, not held for company.
func TestBatcherLingerSendsAPartialBatch(t *testing.T) {
	t.Parallel()
	cq := newCounting(t)
	b := queue.NewBatcher(cq, queue.BatcherConfig{Linger: time.Millisecond})
	res, err := b.SendBatch(t.Context(), []queue.OutMessage{{Group: "g", DedupID: "d", Body: []byte("x")}})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	sends, _ := cq.calls()
	require.Equal(t, []int{1}, sends)
}
