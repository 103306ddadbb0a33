package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/queue"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/subscription"
)

// Defaults of the router's tunables.
const (
	// LeaseDefault is how long a claim on a job lasts beyond the delivery
	// timeout; a claim not finished by then is recovered by the lease poller.
	LeaseDefault = 2 * time.Minute
	// ReceiversDefault is how many goroutines receive from the queue.
	ReceiversDefault = 2
	// MaxInFlightDefault bounds the deliveries one router runs at once, over
	// all pools.
	MaxInFlightDefault = 1024
	// ReceiveWaitDefault is the long-poll wait of one receive call.
	ReceiveWaitDefault = 5 * time.Second
	// ReceiveVisibilityDefault is how long a received message stays
	// invisible before the router extends it: the longest a message taken by
	// a router that then died (kill -9) waits before another router
	// receives it. A delivery in progress extends it every third of it.
	ReceiveVisibilityDefault = 30 * time.Second
	// ShutdownDrainDefault bounds how long Run, once its context has ended,
	// lets the deliveries in flight finish before cancelling them.
	ShutdownDrainDefault = 25 * time.Second
	// heartbeatFloor is the shortest interval between two extensions of a
	// held message's visibility.
	heartbeatFloor = 100 * time.Millisecond
	// finishTimeout bounds the bookkeeping after a delivery (recording its
	// outcome, deleting or handing back its message), which runs even when
	// the drain has cancelled the delivery itself.
	finishTimeout = 10 * time.Second
	// PoolBusyDelayDefault is the longest a message whose pool has no room
	// left in this router stays invisible before it is received again; it
	// comes back sooner when the pool's held work drains sooner (see
	// Pool.DrainEstimate).
	PoolBusyDelayDefault = time.Second
	// poolBusyDelayFloor is the shortest such wait: shorter would have routers
	// ask the queue for messages they still cannot start.
	poolBusyDelayFloor = 20 * time.Millisecond
	// parkMax is the longest the capacity of a message put back for a
	// busy pool stays out of the receive loop when the pool frees no room
	// (Pool.WaitRoom): long enough that a backlog of one pool's work is not
	// received and put back in a spin, short enough that the work of other
	// pools behind it in the queue is still found quickly.
	parkMax = 100 * time.Millisecond
)

// Store is what the router reads of the store. It never writes a job: the
// lifecycle verbs do.
type Store interface {
	JobGetByID(ctx context.Context, id string) (*dispatch.Job, error)
	EventGetByID(ctx context.Context, id string) (*event.Event, error)
	SubscriptionGetByID(ctx context.Context, id string) (*subscription.Subscription, error)
}

// Subscriptions gives the router a job's subscription as it is now
// (*subscription.Cache: from memory, a change on another instance seen
// within its refresh interval, 1 s by default). The result is shared and
// must not be modified.
type Subscriptions interface {
	Get(ctx context.Context, id string) (*subscription.Subscription, error)
}

// Lifecycle is what the router needs of the job lifecycle
// (*dispatch.Lifecycle): the verbs that move a job it received.
type Lifecycle interface {
	GroupHead(ctx context.Context, j *dispatch.Job) (*dispatch.Job, error)
	ParkPaused(ctx context.Context, j *dispatch.Job) error
	ClaimGated(ctx context.Context, j *dispatch.Job, p dispatch.GateParams) (dispatch.GateResult, error)
	RecordOutcome(ctx context.Context, j *dispatch.Job, o dispatch.Outcome) (*dispatch.Job, error)
	HandBack(ctx context.Context, j *dispatch.Job, reason string) error
	Cancel(ctx context.Context, id, reason string) (*dispatch.Job, error)
}

// Config configures a Router.
type Config struct {
	Queue         queue.Queue
	Store         Store
	Subscriptions Subscriptions
	Lifecycle     Lifecycle
	Pools         *Pools
	Transport     Transport
	// WorkerID names this router in attempts ("host:pid").
	WorkerID string
	// Lease is added to the delivery timeout to give a claim's length.
	// Default LeaseDefault.
	Lease time.Duration
	// ReceiveVisibility is the visibility timeout the router receives
	// with, extended (every third of it) while it holds the message.
	// Default ReceiveVisibilityDefault.
	ReceiveVisibility time.Duration
	// ShutdownDrain bounds how long Run lets deliveries in flight finish
	// once its context has ended. Default ShutdownDrainDefault.
	ShutdownDrain time.Duration
	// Receivers is the number of receiving goroutines. Default 2.
	Receivers int
	// MaxInFlight bounds concurrent deliveries. Default 1024.
	MaxInFlight int
	// ReceiveWait is the long-poll wait. Default 5 s.
	ReceiveWait time.Duration
	// PoolBusyDelay is the longest a message is put back when its pool has
	// no room in this router. Default PoolBusyDelayDefault.
	PoolBusyDelay time.Duration
	// OnAttemptFunc, when set, is called after each recorded attempt (for
	// metrics and tests).
	OnAttemptFunc func(j *dispatch.Job, o dispatch.Outcome)
	Logger        *slog.Logger
	NowFunc       func() time.Time
	// TracerProvider, when set, makes each delivery attempt a CLIENT span
	// of its job's trace (see tracing.go), whose context the transport
	// sends on. Nil is tracing off: no span, nothing propagated.
	TracerProvider trace.TracerProvider
}

// Router consumes the queue and delivers jobs. See doc.go.
type Router struct {
	cfg      Config
	inFlight chan struct{}
	// poolShare is the most deliveries (running or waiting for a slot) one
	// pool may hold of this router's capacity.
	poolShare int
	// events caches the stored events the jobs are of; it lives while Run
	// runs.
	events *eventCache
	wg     sync.WaitGroup
	// tracer is nil when tracing is off.
	tracer trace.Tracer
}

// New returns a Router.
func New(cfg Config) *Router {
	if cfg.Lease <= 0 {
		cfg.Lease = LeaseDefault
	}
	if cfg.ReceiveVisibility <= 0 {
		cfg.ReceiveVisibility = ReceiveVisibilityDefault
	}
	if cfg.ShutdownDrain <= 0 {
		cfg.ShutdownDrain = ShutdownDrainDefault
	}
	if cfg.Receivers <= 0 {
		cfg.Receivers = ReceiversDefault
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = MaxInFlightDefault
	}
	if cfg.ReceiveWait <= 0 {
		cfg.ReceiveWait = ReceiveWaitDefault
	}
	if cfg.PoolBusyDelay <= 0 {
		cfg.PoolBusyDelay = PoolBusyDelayDefault
	}
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Logger = cfg.Logger.With("component", "router")
	r := &Router{
		cfg: cfg, inFlight: make(chan struct{}, cfg.MaxInFlight),
		poolShare: max(1, cfg.MaxInFlight*3/4),
	}
	if cfg.TracerProvider != nil {
		r.tracer = cfg.TracerProvider.Tracer(tracerName)
	}
	return r
}

// Run receives and delivers until ctx ends, then shuts down and returns
// nil: it asks for no more messages, lets the receives already open finish
// (a receive cancelled mid-poll could lose what the queue handed it to the
// visibility timeout), hands every message received but not started back
// to the queue at once (visibility 0), and lets the deliveries in flight
// finish for at most ShutdownDrain; past it their contexts are cancelled
// and their outcomes recorded (bounded by finishTimeout).
func (r *Router) Run(ctx context.Context) error {
	r.events = newEventCache(r.cfg.Store)
	// work is what outlives ctx during the drain: open receives,
	// deliveries in flight and the bookkeeping of the messages.
	work, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	var recv sync.WaitGroup
	for range r.cfg.Receivers {
		recv.Go(func() {
			r.receiveLoop(ctx, work)
		})
	}
	<-ctx.Done()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		recv.Wait() // no receive loop adds to r.wg after this
		r.wg.Wait()
	}()
	drain := time.NewTimer(r.cfg.ShutdownDrain)
	defer drain.Stop()
	select {
	case <-drained:
	case <-drain.C:
		r.cfg.Logger.WarnContext(work, "shutdown drain over: deliveries in flight cancelled", "drain", r.cfg.ShutdownDrain)
		stopWork()
		<-drained
	}
	r.events.close()
	return nil
}

// receiveLoop receives until ctx ends. Its receives run under work, so one
// open when ctx ends returns what the queue gave it, which runGroup hands
// back at once.
func (r *Router) receiveLoop(ctx, work context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		// Take capacity before receiving, so a full router does not hold
		// messages it cannot start.
		free := 0
		for free < queue.MaxBatch {
			select {
			case r.inFlight <- struct{}{}:
				free++
				continue
			default:
			}
			if free > 0 {
				break
			}
			select {
			case r.inFlight <- struct{}{}:
				free++
			case <-ctx.Done():
				return
			}
		}
		msgs, err := r.cfg.Queue.Receive(work, queue.ReceiveParams{
			Max: free, Wait: r.cfg.ReceiveWait, Visibility: r.cfg.ReceiveVisibility,
		})
		for range free - len(msgs) {
			<-r.inFlight
		}
		// An SQS FIFO receive may return several messages of one group;
		// they run one after another, in order, never side by side. What
		// a failed receive returned is held all the same (and handed back
		// at once when shutting down).
		for _, run := range byGroup(msgs) {
			r.wg.Go(func() {
				r.runGroup(ctx, work, run)
			})
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.cfg.Logger.WarnContext(ctx, "queue receive failed", "error", err)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
	}
}

// byGroup splits received messages into runs of one group each, keeping
// the queue's order within every run.
func byGroup(msgs []queue.Message) [][]queue.Message {
	if len(msgs) == 1 {
		return [][]queue.Message{msgs}
	}
	index := make(map[string]int, len(msgs))
	var runs [][]queue.Message
	for _, m := range msgs {
		i, ok := index[m.Group]
		if !ok {
			i = len(runs)
			index[m.Group] = i
			runs = append(runs, nil)
		}
		runs[i] = append(runs[i], m)
	}
	return runs
}

// runGroup handles the messages of one group from one receive, in order.
// Until a message is handled it stays invisible (a heartbeat extends its
// visibility), so no other consumer receives it, nor, the group being held
// by it, any later message of the group. When a message is left to its
// visibility timeout or put back, the messages after it are returned to the
// queue at once: they must not overtake it, and the queue hands them out
// again only after it. When ctx ends (shutdown) the messages not started are
// handed back at once; the one being delivered finishes under work.
func (r *Router) runGroup(ctx, work context.Context, msgs []queue.Message) {
	h := newHeldRun(msgs)
	hctx, stop := context.WithCancel(work)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.heartbeat(ctx, work, hctx, h)
	}()
	defer func() {
		stop()
		<-done
	}()
	for i, m := range msgs {
		if ctx.Err() != nil {
			r.handBack(work, h.release())
		}
		if !h.begin() {
			// Shutting down: msgs[i:] were handed back.
			for range msgs[i:] {
				<-r.inFlight
			}
			return
		}
		// A delivery that has started finishes even when ctx ends
		// (shutdown), bounded by its own timeout and the drain.
		handled, busy := r.handle(work, ctx, m)
		h.finish()
		if !handled {
			r.handBack(work, h.release())
			for range msgs[i+1:] {
				<-r.inFlight
			}
		}
		if busy.pool != nil {
			// The message went back because its pool is over its share:
			// keep its capacity out of the receive loop until the pool
			// frees room (or briefly), so a backlog of one pool's work is
			// not received, decoded and put back over and over.
			busy.pool.WaitRoom(ctx, min(busy.wait, parkMax))
		}
		<-r.inFlight
		if !handled {
			return
		}
	}
}

// handBack makes msgs receivable again at once.
func (r *Router) handBack(ctx context.Context, msgs []queue.Message) {
	if len(msgs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	for _, m := range msgs {
		if err := r.cfg.Queue.ChangeVisibility(ctx, m.ReceiptHandle, 0); err != nil && !errors.Is(err, queue.ErrInvalidReceipt) {
			r.cfg.Logger.WarnContext(ctx, "queue change visibility failed", "error", err)
		}
	}
}

// heldRun is the part of a run still held: its messages not yet handled,
// in order, the first of them maybe being handled.
type heldRun struct {
	mu      sync.Mutex
	pending []queue.Message
	// started is whether pending[0] is being handled.
	started bool
	// released is set once the messages not started were given up: none
	// of them may start any more.
	released bool
}

func newHeldRun(msgs []queue.Message) *heldRun {
	return &heldRun{pending: append([]queue.Message(nil), msgs...)}
}

// begin starts the first held message; false when the run was released.
func (h *heldRun) begin() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released || len(h.pending) == 0 {
		return false
	}
	h.started = true
	return true
}

// finish drops the first held message, handled.
func (h *heldRun) finish() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.pending) > 0 {
		h.pending = h.pending[1:]
	}
	h.started = false
}

// release gives up the held messages not started and returns them, each
// once; the one being handled (if any) stays held until it finishes.
func (h *heldRun) release() []queue.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.released = true
	keep := 0
	if h.started && len(h.pending) > 0 {
		keep = 1
	}
	out := append([]queue.Message(nil), h.pending[keep:]...)
	h.pending = h.pending[:keep]
	return out
}

func (h *heldRun) held() []queue.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]queue.Message(nil), h.pending...)
}

// heartbeat extends the visibility of the held messages by ReceiveVisibility
// every third of it until hctx ends, so a long delivery (or a long wait for
// a pool slot) never lets the queue hand a held message to another consumer.
// When ctx ends (shutdown) it hands back at once the messages not started.
func (r *Router) heartbeat(ctx, work, hctx context.Context, h *heldRun) {
	every := max(r.cfg.ReceiveVisibility/3, heartbeatFloor)
	t := time.NewTicker(every)
	defer t.Stop()
	shutdown := ctx.Done()
	for {
		select {
		case <-hctx.Done():
			return
		case <-shutdown:
			shutdown = nil
			r.handBack(work, h.release())
			continue
		case <-t.C:
		}
		for _, m := range h.held() {
			if err := r.cfg.Queue.ChangeVisibility(hctx, m.ReceiptHandle, r.cfg.ReceiveVisibility); err != nil && hctx.Err() == nil && !errors.Is(err, queue.ErrInvalidReceipt) {
				r.cfg.Logger.WarnContext(hctx, "extend message visibility failed", "error", err)
			}
		}
	}
}

// disposition says what becomes of a received message.
type disposition int

const (
	// leave leaves the message to its visibility timeout; the job is safe
	// in the store and the pollers recover it if the message is lost.
	leave disposition = iota
	// drop deletes the message: the job reached a stored state that no
	// longer needs it.
	drop
	// putBack makes the message receivable again once its pool is
	// expected to have room (Pool.DrainEstimate, at most PoolBusyDelay).
	putBack
	// retryLater makes the message receivable again after a back-off on
	// its receive count: a write of its job was refused with the job
	// unchanged (dispatch.ErrKeepMessage; see retryDelay).
	retryLater
	// reread processes the message again from the stored job: its
	// snapshot was no longer current (the claim met a newer version).
	reread
)

// poolBusy is what process reports of a pool it found over its share: the
// pool, and how long the message goes back to the queue for.
type poolBusy struct {
	pool *Pool
	wait time.Duration
}

// handle processes one message: claim the job, deliver it, record the
// outcome, delete the message. Errors are logged here, once.
// It reports whether the message was handled for good: deleted, or its
// job's state made the message unneeded; and, when the message went back
// because its pool had no room, that pool.
func (r *Router) handle(ctx, runCtx context.Context, m queue.Message) (bool, poolBusy) {
	content, err := dispatch.ReadMessage(m.Body)
	if err != nil {
		// No version writes such a body: nothing can be done with it, and
		// a job it may have named is found by the stale-queued rescuer.
		r.cfg.Logger.WarnContext(ctx, "unreadable queue message dropped", "message_id", m.ID, "error", err)
		if err := r.cfg.Queue.Delete(ctx, m.ReceiptHandle); err != nil && !errors.Is(err, queue.ErrInvalidReceipt) {
			r.cfg.Logger.WarnContext(ctx, "queue delete failed", "error", err)
		}
		return true, poolBusy{}
	}
	log := r.cfg.Logger.With("job_id", content.JobID)
	busy := poolBusy{wait: r.cfg.PoolBusyDelay}
	tctx := r.messageTraceContext(ctx, &m)
	disp, err := r.process(tctx, runCtx, content, &busy)
	if disp == reread && err == nil {
		content.Job = nil
		disp, err = r.process(tctx, runCtx, content, &busy)
	}
	if errors.Is(err, dispatch.ErrKeepMessage) {
		disp, err = retryLater, nil
	}
	if err != nil {
		log.ErrorContext(ctx, "job processing failed", "error", err)
	}
	// The message's fate is settled even when the drain has cancelled ctx.
	ctx, cancel := finishing(ctx)
	defer cancel()
	switch {
	case disp == retryLater && runCtx.Err() == nil:
		log.DebugContext(ctx, "write refused, job unchanged: message kept", "receive_count", m.ReceiveCount)
		if err := r.cfg.Queue.ChangeVisibility(ctx, m.ReceiptHandle, retryDelay(m.ReceiveCount, r.cfg.Lease)); err != nil && !errors.Is(err, queue.ErrInvalidReceipt) {
			log.WarnContext(ctx, "queue change visibility failed", "error", err)
		}
	case disp == drop:
		if err := r.cfg.Queue.Delete(ctx, m.ReceiptHandle); err != nil && !errors.Is(err, queue.ErrInvalidReceipt) {
			log.WarnContext(ctx, "queue delete failed", "error", err)
		}
		return true, poolBusy{}
	case disp == putBack || runCtx.Err() != nil:
		// Pool full here, or shutting down before the job started: another
		// receive (maybe another router) takes it.
		wait := busy.wait
		if runCtx.Err() != nil {
			wait, busy = 0, poolBusy{}
		}
		if err := r.cfg.Queue.ChangeVisibility(ctx, m.ReceiptHandle, wait); err != nil && !errors.Is(err, queue.ErrInvalidReceipt) {
			log.WarnContext(ctx, "queue change visibility failed", "error", err)
		}
		return false, busy
	}
	return false, poolBusy{}
}

// process runs one job and says what to do with its message. The job is
// the message's snapshot when it carries one (the store is then not read
// before the claim), else read from the store.
func (r *Router) process(ctx, runCtx context.Context, msg dispatch.MessageContent, busy *poolBusy) (disposition, error) {
	job, snapshot := msg.Job, msg.Job != nil
	if !snapshot {
		var err error
		job, err = r.cfg.Store.JobGetByID(ctx, msg.JobID)
		if errors.Is(err, store.ErrNotFound) {
			return drop, nil
		}
		if err != nil {
			return leave, fmt.Errorf("get job: %w", err)
		}
	}
	if job.Status != dispatch.StatusQueued || job.Delivery == dispatch.DeliveryPull {
		return drop, nil // handled already, cancelled, or not ours to push
	}
	if runCtx.Err() != nil {
		return leave, nil // shutting down: hand it to another router
	}
	d := &Delivery{Job: job}
	if job.Kind == dispatch.KindEvent {
		proceed, err := r.prepareEventJob(ctx, d, msg.Event)
		if err != nil || !proceed {
			return dropIf(err == nil), err
		}
	}
	head, known := r.deliverHeadsInPlace(ctx, runCtx, job)
	pool, err := r.cfg.Pools.Get(ctx, job.DispatchPoolID)
	if err != nil {
		return leave, fmt.Errorf("get pool: %w", err)
	}
	// The gates, then the claim (dispatch.ClaimGated): the order gate of
	// the job's mode; the pool's admission — one pool holds at most its
	// share of this router, so a slow pool never takes the capacity other
	// pools need, and within it work waits here for the pool's slots, so a
	// slot that frees never waits on the queue; the circuit of the job's
	// subscription, last before the claim.
	admit := &poolAdmission{pool: pool, share: r.poolShare}
	res, err := r.cfg.Lifecycle.ClaimGated(ctx, job, dispatch.GateParams{
		Claim: dispatch.ClaimParams{
			Worker: r.cfg.WorkerID, Lease: time.Duration(job.TimeoutSeconds)*time.Second + r.cfg.Lease,
		},
		Admit: admit, Head: head, HeadKnown: known, Snapshot: snapshot,
	})
	if err != nil {
		return leave, err
	}
	switch res {
	case dispatch.GateClaimed:
	case dispatch.GateBusy:
		// Past its share the message goes back until the pool is expected
		// to have room.
		*busy = poolBusy{pool: pool, wait: pool.DrainEstimate(poolBusyDelayFloor, r.cfg.PoolBusyDelay)}
		return putBack, nil
	case dispatch.GateStale:
		return reread, nil // the snapshot was not current: read the job
	case dispatch.GateRefused:
		return retryLater, nil // the store refused the claim, the job as read: keep the message
	case dispatch.GateFailed:
		return leave, nil // not returned without an error
	default:
		// Held by its group or its circuit (parked), discarded, or moved
		// by someone else, whose message or poller follows.
		return drop, nil
	}
	defer pool.Unhold()
	if err := pool.Acquire(runCtx); err != nil {
		// Shutting down before a slot freed: hand the job back at once.
		fctx, cancel := finishing(ctx)
		defer cancel()
		if err := r.cfg.Lifecycle.HandBack(fctx, job, "router shutting down"); err != nil {
			return leave, err
		}
		return drop, nil
	}
	d.Attempt = job.AttemptCount
	ctx, span := r.startAttempt(ctx, d)
	started := time.Now()
	out := r.cfg.Transport.Deliver(ctx, d)
	pool.Release(time.Since(started))
	// The outcome is recorded even when the drain cancelled the delivery.
	fctx, cancel := finishing(ctx)
	defer cancel()
	disp, err := r.record(fctx, job, out)
	endAttempt(span, out, err)
	return disp, err
}

// finishing returns a context for the bookkeeping of a message or job that
// ctx's end must not cut short, bounded by finishTimeout.
func finishing(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
}

// record hands an outcome to the lifecycle's finish verb (RecordOutcome)
// and says what becomes of the message.
func (r *Router) record(ctx context.Context, job *dispatch.Job, out dispatch.Outcome) (disposition, error) {
	if out.Attempted && out.Attempt.Worker == "" {
		out.Attempt.Worker = r.cfg.WorkerID
	}
	j, err := r.cfg.Lifecycle.RecordOutcome(ctx, job, out)
	switch {
	case errors.Is(err, dispatch.ErrLeaseLost):
		return drop, nil // our lease expired and another worker owns the job now
	case err != nil:
		return leave, fmt.Errorf("record attempt: %w", err)
	}
	traceOutcome(ctx, j)
	if r.cfg.OnAttemptFunc != nil && out.Attempted {
		r.cfg.OnAttemptFunc(j, out)
	}
	return drop, nil
}

func dropIf(ok bool) disposition {
	if ok {
		return drop
	}
	return leave
}

// prepareEventJob loads what an EVENT job's delivery needs; ev is its event
// when its message carried it. proceed is false when the job must not be
// delivered now (its subscription is paused or gone, or its event no longer
// stored); the job was then moved accordingly.
func (r *Router) prepareEventJob(ctx context.Context, d *Delivery, ev *event.Event) (proceed bool, err error) {
	job := d.Job
	sub, err := r.cfg.Subscriptions.Get(ctx, job.SubscriptionID)
	if errors.Is(err, store.ErrNotFound) {
		if _, err := r.cfg.Lifecycle.Cancel(ctx, job.ID, "subscription deleted"); err != nil &&
			!errors.Is(err, dispatch.ErrInvalidTransition) && !errors.Is(err, store.ErrNotFound) {
			return false, fmt.Errorf("cancel job of deleted subscription: %w", err)
		}
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get subscription %s: %w", job.SubscriptionID, err)
	}
	if sub.Status == subscription.StatusPaused {
		// The cached subscription may be up to a refresh old, and a resume
		// on another instance releases the parked jobs at once: confirm
		// with the store before parking for the (long) safety poll.
		if sub, err = r.cfg.Store.SubscriptionGetByID(ctx, job.SubscriptionID); err != nil {
			return false, fmt.Errorf("get subscription %s: %w", job.SubscriptionID, err)
		}
		if sub.Status == subscription.StatusPaused {
			return false, r.cfg.Lifecycle.ParkPaused(ctx, job)
		}
	}
	if ev != nil {
		r.events.put(ev) // for the event's other jobs and retries
	} else {
		ev, err = r.events.get(ctx, job.EventID)
	}
	if errors.Is(err, store.ErrNotFound) {
		// Cleanup keeps the events of unfinished jobs, so this is an
		// operator's retry of a finished job whose event has since passed
		// the event retention: nothing left to deliver.
		_, err := r.record(ctx, job, dispatch.Outcome{Err: dispatch.Permanent(
			fmt.Errorf("event %s is no longer stored (past the event retention)", job.EventID))})
		return false, err
	}
	if err != nil {
		return false, fmt.Errorf("get event %s: %w", job.EventID, err)
	}
	d.Event = ev
	d.Subscription = sub
	// The subscription's current target (or destination's targetUrl, API.md
	// §15) and headers apply to every attempt.
	job.TargetURL = sub.DeliveryTarget()
	job.Headers = sub.Headers
	return true, nil
}
