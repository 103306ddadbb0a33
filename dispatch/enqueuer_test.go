package dispatch_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/clocktest"
	"github.com/hooklane/hooklane/queue"
	"github.com/hooklane/hooklane/queue/memqueue"
)

// switchableQueue is a real in-process queue behind a switch that makes
// every send fail as a whole, as an unreachable queue server does; it
// counts the send calls that reached it.
type switchableQueue struct {
	*memqueue.Queue
	down  atomic.Bool
	sends atomic.Int64
}

func (q *switchableQueue) SendBatch(ctx context.Context, msgs []queue.OutMessage) ([]queue.SendResult, error) {
	q.sends.Add(1)
	if q.down.Load() {
		return nil, errors.New("connection refused")
	}
	return q.Queue.SendBatch(ctx, msgs)
}

// TestEnqueuerBreaker: once a send fails as a whole, later sends skip the
// queue during the cooldown (jobs go straight back to PENDING), the cooldown
// doubles while the queue stays down, and a send after it probes the queue
// and closes the breaker when it answers.
func TestEnqueuerBreaker(t *testing.T) {
	t.Parallel()
	env := newReleaseEnv(t)
	q := &switchableQueue{Queue: env.q}
	clk := clocktest.New(time.Now())
	enq := &dispatch.Enqueuer{Queue: q, Store: env.st, NewID: env.ids.New, NowFunc: clk.Now}
	ctx := context.Background()
	queued := func() *dispatch.Job { return env.job(t, "sub", "", dispatch.StatusQueued, "") }

	q.down.Store(true)
	failed, err := enq.Enqueue(ctx, []*dispatch.Job{queued()})
	require.ErrorContains(t, err, "connection refused", "the error says why the job went back")
	require.Equal(t, 1, failed)
	require.EqualValues(t, 1, q.sends.Load())

	// Within the first cooldown (1 s) the queue is not tried.
	clk.Advance(500 * time.Millisecond)
	j := queued()
	failed, err = enq.Enqueue(ctx, []*dispatch.Job{j})
	require.ErrorContains(t, err, "skipped", "the breaker's skip is the reason")
	require.ErrorContains(t, err, "connection refused", "with the failure that opened it")
	require.Equal(t, 1, failed)
	require.EqualValues(t, 1, q.sends.Load())
	stored, err := env.st.JobGetByID(ctx, j.ID)
	require.NoError(t, err)
	require.Equal(t, dispatch.StatusPending, stored.Status, "a skipped job waits PENDING for the pending poller")

	// After it, one probe; still down, so the cooldown doubles to 2 s.
	clk.Advance(600 * time.Millisecond)
	_, _ = enq.Enqueue(ctx, []*dispatch.Job{queued()})
	require.EqualValues(t, 2, q.sends.Load())
	clk.Advance(1500 * time.Millisecond)
	_, _ = enq.Enqueue(ctx, []*dispatch.Job{queued()})
	require.EqualValues(t, 2, q.sends.Load(), "still inside the doubled cooldown")

	// The queue is back: the next probe goes through and closes the breaker.
	q.down.Store(false)
	clk.Advance(time.Second)
	failed, err = enq.Enqueue(ctx, []*dispatch.Job{queued()})
	require.NoError(t, err)
	require.Zero(t, failed)
	failed, err = enq.Enqueue(ctx, []*dispatch.Job{queued()})
	require.NoError(t, err)
	require.Zero(t, failed)
	require.EqualValues(t, 4, q.sends.Load())
}

// TestEnqueuerWritesTheFormAsked: JSONMessages has the snapshot sent in
// the JSON form an earlier release reads; by default it goes binary.
func TestEnqueuerWritesTheFormAsked(t *testing.T) {
	t.Parallel()
	for _, jsonForm := range []bool{false, true} {
		env := newReleaseEnv(t)
		enq := &dispatch.Enqueuer{Queue: env.q, Store: env.st, NewID: env.ids.New, JSONMessages: jsonForm}
		j := env.job(t, "sub", "", dispatch.StatusQueued, "")
		j.Kind = dispatch.KindEvent // snapshotted: an EVENT job without credentials of its own
		failed, err := enq.Enqueue(context.Background(), []*dispatch.Job{j})
		require.NoError(t, err)
		require.Zero(t, failed)
		msgs, err := env.q.Receive(context.Background(), queue.ReceiveParams{Max: 1})
		require.NoError(t, err)
		require.Len(t, msgs, 1)
		if jsonForm {
			require.Equal(t, byte('{'), msgs[0].Body[0], "JSON form: %.20q", msgs[0].Body)
		} else {
			require.True(t, strings.HasPrefix(string(msgs[0].Body), "~1 "), "binary form: %.20q", msgs[0].Body)
		}
		got, err := dispatch.ReadMessage(msgs[0].Body)
		require.NoError(t, err)
		require.Equal(t, j.ID, got.Job.ID)
	}
}

// TestEnqueueOutlivesTheCallersContext: jobs are stored QUEUED before
// they are sent, so a caller whose context ended (a router past its
// finishing deadline, a producer that hung up) still has them sent — and
// when the queue is down, moved back to PENDING — instead of leaving them
// QUEUED without a message for the stale-queued poller.
func TestEnqueueOutlivesTheCallersContext(t *testing.T) {
	t.Parallel()
	env := newReleaseEnv(t)
	q := &switchableQueue{Queue: env.q}
	enq := &dispatch.Enqueuer{Queue: q, Store: env.st, NewID: env.ids.New}
	ended, cancel := context.WithCancel(context.Background())
	cancel()

	sent := env.job(t, "sub", "", dispatch.StatusQueued, "")
	failed, err := enq.Enqueue(ended, []*dispatch.Job{sent})
	require.NoError(t, err)
	require.Zero(t, failed)
	msgs, err := env.q.Receive(context.Background(), queue.ReceiveParams{Max: 1})
	require.NoError(t, err)
	require.Len(t, msgs, 1, "the job's message was sent")

	q.down.Store(true)
	back := env.job(t, "sub", "", dispatch.StatusQueued, "")
	failed, err = enq.Enqueue(ended, []*dispatch.Job{back})
	require.ErrorContains(t, err, "connection refused")
	require.Equal(t, 1, failed)
	stored, err := env.st.JobGetByID(context.Background(), back.ID)
	require.NoError(t, err)
	require.Equal(t, dispatch.StatusPending, stored.Status, "a job it could not send waits PENDING for the pending poller")
}
