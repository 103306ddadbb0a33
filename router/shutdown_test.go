package router_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/queue"
	"github.com/hooklane/hooklane/router"
)

// abandoningQueue is memqueue as SQS behaves for a receive whose caller
// gives up mid-poll: the long poll goes on without the caller, and what
// it takes is lost to the visibility timeout (the SDK abandons the HTTP
// response). It signals every receive it starts on entered.
type abandoningQueue struct {
	queue.Queue
	entered chan struct{}
}

func (q abandoningQueue) Receive(ctx context.Context, p queue.ReceiveParams) ([]queue.Message, error) {
	select {
	case q.entered <- struct{}{}:
	default:
	}
	msgs, err := q.Queue.Receive(context.WithoutCancel(ctx), p)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return msgs, err
}

// countingQueue counts the receipts of each message ID.
type countingQueue struct {
	queue.Queue
	mu       *sync.Mutex
	receipts map[string]int
}

func (q countingQueue) Receive(ctx context.Context, p queue.ReceiveParams) ([]queue.Message, error) {
	msgs, err := q.Queue.Receive(ctx, p)
	q.mu.Lock()
	for _, m := range msgs {
		q.receipts[m.ID]++
	}
	q.mu.Unlock()
	return msgs, err
}

// transportFunc adapts a function to router.Transport.
type transportFunc func(ctx context.Context, d *router.Delivery) dispatch.Outcome

func (f transportFunc) Deliver(ctx context.Context, d *router.Delivery) dispatch.Outcome {
	return f(ctx, d)
}

// succeed is a transport whose every attempt succeeds.
func succeed(context.Context, *router.Delivery) dispatch.Outcome {
	return dispatch.Outcome{Attempted: true, Attempt: dispatch.Attempt{StatusCode: 200}}
}

// running is a router started on g's store and lifecycle.
type running struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startRouter runs a router over q (task jobs only: no subscriptions)
// until the returned handle is stopped, or the test ends.
func startRouter(t *testing.T, g *gw, q queue.Queue, tr router.Transport, cfg router.Config) *running {
	t.Helper()
	cfg.Queue, cfg.Store, cfg.Lifecycle, cfg.Pools, cfg.Transport = q, g.st, g.jobs, g.pools, tr
	if cfg.WorkerID == "" {
		cfg.WorkerID = "test:2"
	}
	if cfg.ReceiveWait == 0 {
		cfg.ReceiveWait = 200 * time.Millisecond
	}
	rt := router.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		_ = rt.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// waitDone waits up to within for Run to return.
func (r *running) waitDone(within time.Duration) bool {
	select {
	case <-r.done:
		return true
	case <-time.After(within):
		return false
	}
}

// TestStoppedRouterHandsBackOpenReceive: a router stopped while its
// receive is open does not abandon that receive (with SQS, what it took
// would be stranded for the visibility timeout): it lets it finish and
// hands the message it got back at once, so another router delivers the
// job within seconds, not after the lease or the receive visibility.
func TestStoppedRouterHandsBackOpenReceive(t *testing.T) {
	t.Parallel()
	g := newGW(t, gwOptions{noRouter: true})
	aq := abandoningQueue{Queue: g.q, entered: make(chan struct{}, 1)}
	delivered := make(chan string, 1)
	a := startRouter(t, g, aq, transportFunc(func(ctx context.Context, d *router.Delivery) dispatch.Outcome {
		delivered <- "a:" + d.Job.ID
		return succeed(ctx, d)
	}), router.Config{Receivers: 1, ReceiveWait: 5 * time.Second, WorkerID: "a:1"})
	<-aq.entered // A is long-polling the empty queue
	a.cancel()
	// The message arrives while A's receive is still open.
	j := g.taskJob("http://127.0.0.1:9/", dispatch.ModeImmediate, "", dispatch.Retry{MaxAttempts: 3})
	g.submit(j)
	require.True(t, a.waitDone(30*time.Second), "router A did not stop")

	startRouter(t, g, g.q, transportFunc(func(ctx context.Context, d *router.Delivery) dispatch.Outcome {
		delivered <- "b:" + d.Job.ID
		return succeed(ctx, d)
	}), router.Config{WorkerID: "b:1"})
	select {
	case got := <-delivered:
		require.Equal(t, "b:"+j.ID, got, "only router B may deliver: A was stopped")
	case <-time.After(10 * time.Second):
		require.Fail(t, "the message router A received while stopping was not handed back: stranded")
	}
	g.waitStatus(j.ID, dispatch.StatusCompleted, 10*time.Second)
}

// TestSlowDeliveryExtendsVisibility: a delivery that takes several times
// the receive visibility keeps its message invisible (the router extends
// it), so no receiver gets the message a second time meanwhile.
func TestSlowDeliveryExtendsVisibility(t *testing.T) {
	t.Parallel()
	g := newGW(t, gwOptions{noRouter: true})
	cq := countingQueue{Queue: g.q, mu: &sync.Mutex{}, receipts: map[string]int{}}
	entered := make(chan struct{}, 2)
	release := make(chan struct{})
	startRouter(t, g, cq, transportFunc(func(ctx context.Context, d *router.Delivery) dispatch.Outcome {
		entered <- struct{}{}
		<-release
		return succeed(ctx, d)
	}), router.Config{Receivers: 3, ReceiveVisibility: time.Second, Lease: time.Hour})
	j := g.taskJob("http://127.0.0.1:9/", dispatch.ModeImmediate, "", dispatch.Retry{MaxAttempts: 3})
	g.submit(j)
	<-entered
	// Four visibilities: unextended, the message would have come back to
	// one of the receivers (polling every 200 ms) three times over.
	<-time.After(4 * time.Second)
	close(release)
	got := g.waitStatus(j.ID, dispatch.StatusCompleted, 10*time.Second)
	require.Equal(t, 1, got.AttemptCount)
	cq.mu.Lock()
	defer cq.mu.Unlock()
	require.Len(t, cq.receipts, 1)
	for id, n := range cq.receipts {
		require.Equal(t, 1, n, "message %s received again during its delivery", id)
	}
}

// TestDrainFinishesDeliveries: a stopped router's Run returns only after
// its delivery in flight finished and was recorded.
func TestDrainFinishesDeliveries(t *testing.T) {
	t.Parallel()
	g := newGW(t, gwOptions{noRouter: true})
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	r := startRouter(t, g, g.q, transportFunc(func(ctx context.Context, d *router.Delivery) dispatch.Outcome {
		entered <- struct{}{}
		<-release
		return succeed(ctx, d)
	}), router.Config{ShutdownDrain: time.Hour})
	j := g.taskJob("http://127.0.0.1:9/", dispatch.ModeImmediate, "", dispatch.Retry{MaxAttempts: 3})
	g.submit(j)
	<-entered
	r.cancel()
	require.False(t, r.waitDone(300*time.Millisecond), "Run returned with a delivery in flight")
	close(release)
	require.True(t, r.waitDone(30*time.Second), "Run did not return after its delivery")
	got := g.job(j.ID)
	require.Equal(t, dispatch.StatusCompleted, got.Status, "the outcome is recorded before Run returns")
}

// TestDrainIsBounded: a delivery that outlasts the drain is cancelled when
// the drain ends; its outcome is still recorded (the job is not left
// IN_PROGRESS for the lease poller) and Run returns.
func TestDrainIsBounded(t *testing.T) {
	t.Parallel()
	g := newGW(t, gwOptions{noRouter: true})
	entered := make(chan struct{}, 1)
	unblock := make(chan struct{}) // only if the drain never cancels the delivery
	var cancelled atomic.Bool
	r := startRouter(t, g, g.q, transportFunc(func(ctx context.Context, _ *router.Delivery) dispatch.Outcome {
		entered <- struct{}{}
		select {
		case <-ctx.Done():
			cancelled.Store(true)
			return dispatch.Outcome{Attempted: true, Err: ctx.Err()}
		case <-unblock:
			return dispatch.Outcome{Attempted: true, Err: context.DeadlineExceeded}
		}
	}), router.Config{ShutdownDrain: 500 * time.Millisecond, Lease: time.Hour})
	j := g.taskJob("http://127.0.0.1:9/", dispatch.ModeImmediate, "", dispatch.Retry{MaxAttempts: 3})
	g.submit(j)
	<-entered
	r.cancel()
	returned := r.waitDone(20 * time.Second)
	if !returned {
		close(unblock)
		<-r.done
	}
	require.True(t, returned, "Run did not return within the drain (plus margin)")
	require.True(t, cancelled.Load(), "the delivery was not cancelled by the end of the drain")
	got := g.job(j.ID)
	require.Contains(t, []dispatch.Status{dispatch.StatusPending, dispatch.StatusQueued}, got.Status, "the cancelled attempt is recorded: a retry is due")
	require.Equal(t, 1, got.AttemptCount)
}
