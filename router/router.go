package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/eventlog"
	"github.com/hooklane/hooklane/queue"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/stream"
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
	// PausedRecheckDefault is how long a job of a paused subscription waits
	// before the router looks again. Resuming the subscription releases its
	// jobs at once (dispatch.Releaser.ReleaseSubscription); this is the
	// safety poll.
	PausedRecheckDefault = 5 * time.Minute
	// BlockedRecheckDefault is how long a job held behind an unfinished
	// earlier job of its BLOCK_ON_ERROR group is parked. The blocker's
	// completion or cancellation releases it at once
	// (dispatch.Releaser.ReleaseGroup); this is the safety poll.
	BlockedRecheckDefault = 5 * time.Minute
	// PoolBusyDelayDefault is how long a message whose pool has no room
	// left in this router stays invisible before it is received again.
	PoolBusyDelayDefault = time.Second
	// LostHeadAfterDefault is how long an earlier job of an ordered group
	// may stay QUEUED and never attempted, while a later job of its group
	// already reached a router, before that router sends it again.
	LostHeadAfterDefault = 10 * time.Second
)

// Store is what the router needs of the store.
type Store interface {
	JobGetByID(ctx context.Context, id string) (*dispatch.Job, error)
	JobUpdate(ctx context.Context, p *dispatch.JobUpdateParams) error
	JobList(ctx context.Context, p *dispatch.JobListParams) (*dispatch.JobPage, error)
	JobListGroup(ctx context.Context, p *dispatch.JobListGroupParams) ([]*dispatch.Job, error)
	EventGetByID(ctx context.Context, id string) (*eventlog.Event, error)
	SubscriptionGetByID(ctx context.Context, id string) (*subscription.Subscription, error)
}

// Config configures a Router.
type Config struct {
	Queue    queue.Queue
	Store    Store
	Pools    *Pools
	Mediator *Mediator
	// Enqueuer sends the jobs the router releases (the next job of a
	// BLOCK_ON_ERROR group whose blocker finished). Required.
	Enqueuer dispatch.JobEnqueuer
	// NewID issues status event ids.
	NewID func() string
	// WorkerID names this router in attempts ("host:pid").
	WorkerID string
	// Lease is added to the delivery timeout to give a claim's length.
	// Default LeaseDefault.
	Lease time.Duration
	// Receivers is the number of receiving goroutines. Default 2.
	Receivers int
	// MaxInFlight bounds concurrent deliveries. Default 1024.
	MaxInFlight int
	// ReceiveWait is the long-poll wait. Default 5 s.
	ReceiveWait time.Duration
	// BlockedRecheck is how long a blocked job is parked before the
	// safety poll looks again. Default BlockedRecheckDefault.
	BlockedRecheck time.Duration
	// PausedRecheck is how long a job of a paused subscription is parked
	// before the safety poll looks again. Default PausedRecheckDefault.
	PausedRecheck time.Duration
	// PoolBusyDelay is how long a message is put back when its pool has no
	// room in this router. Default PoolBusyDelayDefault.
	PoolBusyDelay time.Duration
	// LostHeadAfter is how old (since its last change) a never-attempted
	// QUEUED job holding back a later job of its ordered group must be for
	// the router to send it to the queue again: a later message of a FIFO
	// group arriving while an earlier one is neither in flight nor done
	// means the earlier message was lost (its sender died between the
	// store write and the send). Without this the group would wait for the
	// stale-queued rescuer. Default LostHeadAfterDefault.
	LostHeadAfter time.Duration
	// RandFunc returns a float in [0,1) for backoff jitter; nil uses
	// math/rand/v2.
	RandFunc func() float64
	// OnAttemptFunc, when set, is called after each recorded attempt (for
	// metrics and tests).
	OnAttemptFunc func(j *dispatch.Job, r Result)
	Logger        *slog.Logger
	NowFunc       func() time.Time
}

// Router consumes the queue and delivers jobs. See doc.go.
type Router struct {
	cfg      Config
	inFlight chan struct{}
	// poolShare is the most deliveries (running or waiting for a slot) one
	// pool may hold of this router's capacity.
	poolShare int
	releaser  *dispatch.Releaser
	wg        sync.WaitGroup
}

// New returns a Router.
func New(cfg Config) *Router {
	if cfg.Lease <= 0 {
		cfg.Lease = LeaseDefault
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
	if cfg.BlockedRecheck <= 0 {
		cfg.BlockedRecheck = BlockedRecheckDefault
	}
	if cfg.PausedRecheck <= 0 {
		cfg.PausedRecheck = PausedRecheckDefault
	}
	if cfg.PoolBusyDelay <= 0 {
		cfg.PoolBusyDelay = PoolBusyDelayDefault
	}
	if cfg.LostHeadAfter <= 0 {
		cfg.LostHeadAfter = LostHeadAfterDefault
	}
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Logger = cfg.Logger.With("component", "router")
	return &Router{
		cfg: cfg, inFlight: make(chan struct{}, cfg.MaxInFlight),
		poolShare: max(1, cfg.MaxInFlight*3/4),
		releaser:  &dispatch.Releaser{Store: cfg.Store, Enqueuer: cfg.Enqueuer, NewID: cfg.NewID, NowFunc: cfg.NowFunc},
	}
}

// Releaser returns the releaser the router uses; the API shares its logic
// to release held jobs on cancel and on resume.
func (r *Router) Releaser() *dispatch.Releaser { return r.releaser }

// Run receives and delivers until ctx ends, then waits for the deliveries
// in flight to finish (each is bounded by its timeout) and returns nil.
// Jobs whose messages were received but not started are left to the queue's
// visibility timeout and the pollers.
func (r *Router) Run(ctx context.Context) error {
	var recv sync.WaitGroup
	for range r.cfg.Receivers {
		recv.Add(1)
		go func() {
			defer recv.Done()
			r.receiveLoop(ctx)
		}()
	}
	recv.Wait()
	r.wg.Wait()
	return nil
}

func (r *Router) receiveLoop(ctx context.Context) {
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
		msgs, err := r.cfg.Queue.Receive(ctx, queue.ReceiveParams{
			Max: free, Wait: r.cfg.ReceiveWait, Visibility: r.cfg.Lease,
		})
		for range free - len(msgs) {
			<-r.inFlight
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
		// An SQS FIFO receive may return several messages of one group;
		// they run one after another, in order, never side by side.
		for _, run := range byGroup(msgs) {
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				r.runGroup(ctx, run)
			}()
		}
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
// again only after it.
func (r *Router) runGroup(ctx context.Context, msgs []queue.Message) {
	hb := newHeartbeat(msgs)
	hctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.heartbeat(hctx, hb)
	}()
	defer func() {
		stop()
		<-done
	}()
	for i, m := range msgs {
		// A delivery that has started finishes even when ctx ends
		// (shutdown), bounded by its own timeout.
		handled := r.handle(context.WithoutCancel(ctx), ctx, m)
		hb.finish()
		<-r.inFlight
		if !handled {
			for _, rest := range msgs[i+1:] {
				hb.finish()
				if err := r.cfg.Queue.ChangeVisibility(context.WithoutCancel(ctx), rest.ReceiptHandle, 0); err != nil && !errors.Is(err, queue.ErrInvalidReceipt) {
					r.cfg.Logger.WarnContext(ctx, "queue change visibility failed", "error", err)
				}
				<-r.inFlight
			}
			return
		}
	}
}

// heartbeatState is the part of a run still held: its messages not yet
// handled, in order.
type heartbeatState struct {
	mu      sync.Mutex
	pending []queue.Message
}

func newHeartbeat(msgs []queue.Message) *heartbeatState {
	return &heartbeatState{pending: append([]queue.Message(nil), msgs...)}
}

// finish drops the first held message.
func (h *heartbeatState) finish() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.pending) > 0 {
		h.pending = h.pending[1:]
	}
}

func (h *heartbeatState) held() []queue.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]queue.Message(nil), h.pending...)
}

// heartbeat extends the visibility of the held messages every third of the
// lease until ctx ends, so a long delivery (or a long wait for a pool slot)
// never lets the queue hand a held message to another consumer.
func (r *Router) heartbeat(ctx context.Context, h *heartbeatState) {
	every := max(r.cfg.Lease/3, 500*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, m := range h.held() {
			if err := r.cfg.Queue.ChangeVisibility(ctx, m.ReceiptHandle, r.cfg.Lease); err != nil && ctx.Err() == nil && !errors.Is(err, queue.ErrInvalidReceipt) {
				r.cfg.Logger.WarnContext(ctx, "extend message visibility failed", "error", err)
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
	// putBack makes the message receivable again after PoolBusyDelay.
	putBack
)

// handle processes one message: claim the job, deliver it, record the
// outcome, delete the message. Errors are logged here, once.
// It reports whether the message was handled for good: deleted, or its
// job's state made the message unneeded.
func (r *Router) handle(ctx, runCtx context.Context, m queue.Message) bool {
	jobID := string(m.Body)
	log := r.cfg.Logger.With("job_id", jobID)
	disp, err := r.process(ctx, runCtx, jobID)
	if err != nil {
		log.ErrorContext(ctx, "job processing failed", "error", err)
	}
	switch {
	case disp == drop:
		if err := r.cfg.Queue.Delete(ctx, m.ReceiptHandle); err != nil && !errors.Is(err, queue.ErrInvalidReceipt) {
			log.WarnContext(ctx, "queue delete failed", "error", err)
		}
		return true
	case disp == putBack || runCtx.Err() != nil:
		// Pool full here, or shutting down before the job started: another
		// receive (maybe another router) takes it.
		wait := r.cfg.PoolBusyDelay
		if runCtx.Err() != nil {
			wait = 0
		}
		if err := r.cfg.Queue.ChangeVisibility(ctx, m.ReceiptHandle, wait); err != nil && !errors.Is(err, queue.ErrInvalidReceipt) {
			log.WarnContext(ctx, "queue change visibility failed", "error", err)
		}
	}
	return false
}

// process runs one job and says what to do with its message.
func (r *Router) process(ctx, runCtx context.Context, jobID string) (disposition, error) {
	job, err := r.cfg.Store.JobGetByID(ctx, jobID)
	if errors.Is(err, store.ErrNotFound) {
		return drop, nil
	}
	if err != nil {
		return leave, fmt.Errorf("get job: %w", err)
	}
	if job.Status != dispatch.StatusQueued || job.Delivery == dispatch.DeliveryPull {
		return drop, nil // handled already, cancelled, or not ours to push
	}
	if runCtx.Err() != nil {
		return leave, nil // shutting down: hand it to another router
	}
	d := &Delivery{Job: job}
	if job.Kind == dispatch.KindEvent {
		proceed, err := r.prepareEventJob(ctx, d)
		if err != nil || !proceed {
			return dropIf(err == nil), err
		}
	} else {
		key, err := SecretKey(job.Secret)
		if err != nil {
			return r.finish(ctx, job, Result{Err: Permanent(fmt.Errorf("task job secret: %w", err))}, false)
		}
		d.Keys = [][]byte{key}
	}
	held, err := r.holdForOrder(ctx, job)
	if err != nil || held {
		return dropIf(err == nil), err
	}
	now := r.cfg.NowFunc()
	if job.Expired(now) {
		return r.finish(ctx, job, Result{Err: Permanent(errors.New("max age passed before delivery"))}, false)
	}
	pool, err := r.cfg.Pools.Get(ctx, job.DispatchPoolID)
	if err != nil {
		return leave, fmt.Errorf("get pool: %w", err)
	}
	// Bound what one pool holds of this router, so a slow pool never takes
	// the capacity other pools need: past its share the message goes back.
	if !pool.TryHold(min(2*pool.def.Concurrency, r.poolShare)) {
		return putBack, nil
	}
	defer pool.Unhold()
	if err := r.claim(ctx, job, now); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return drop, nil // someone else moved it; their message or poller follows
		}
		return leave, err
	}
	if err := pool.Acquire(runCtx); err != nil {
		// Shutting down before a slot freed: hand the job back at once.
		return r.handBack(ctx, job)
	}
	d.Attempt = job.AttemptCount
	res := r.cfg.Mediator.Deliver(ctx, d)
	pool.Release()
	return r.finish(ctx, job, res, true)
}

func dropIf(ok bool) disposition {
	if ok {
		return drop
	}
	return leave
}

// holdForOrder applies the ordering rules of the job's mode before an
// attempt (API.md §6). held is true when the job was parked instead:
//   - BLOCK_ON_ERROR: any unfinished earlier job of the group (PENDING,
//     QUEUED, IN_PROGRESS or ERROR) holds it; it is parked PENDING with
//     BlockedBy set and a far NextAttemptAt, and released when the blocker
//     completes or is cancelled.
//   - NEXT_ON_ERROR: a first attempt waits for earlier jobs of the group
//     that have not had their first attempt yet (their send failed, or they
//     were parked), so first attempts start in ingest order.
func (r *Router) holdForOrder(ctx context.Context, job *dispatch.Job) (bool, error) {
	if job.MessageGroup == "" {
		return false, nil
	}
	switch job.Mode {
	case dispatch.ModeBlockOnError:
		earlier, err := r.cfg.Store.JobListGroup(ctx, &dispatch.JobListGroupParams{
			SubscriptionID: job.SubscriptionID, MessageGroup: job.MessageGroup,
			BeforeOrderKey: job.OrderKey(), Statuses: dispatch.Unfinished(), Limit: 1,
		})
		if err != nil {
			return false, fmt.Errorf("list earlier jobs of group: %w", err)
		}
		if len(earlier) == 0 {
			return false, nil
		}
		r.resendLostHead(ctx, earlier[0])
		now := r.cfg.NowFunc()
		if err := job.Transition(dispatch.StatusPending, now); err != nil {
			return true, nil //nolint:nilerr // moved on meanwhile
		}
		until := now.Add(r.cfg.BlockedRecheck)
		job.NextAttemptAt = &until
		job.BlockedBy = earlier[0].ID
		ev := job.StatusEvent(r.cfg.NewID(), stream.TypeDispatchBlocked, now)
		if err := r.cfg.Store.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: job, Events: []stream.Event{ev}}); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return true, nil
			}
			return false, fmt.Errorf("park blocked job: %w", err)
		}
		// The blocker may have finished between the check and the park:
		// look again, so the release is never missed.
		if _, err := r.releaser.ReleaseGroup(ctx, job.SubscriptionID, job.MessageGroup); err != nil {
			return true, fmt.Errorf("release group after park: %w", err)
		}
		return true, nil
	case dispatch.ModeNextOnError:
		if job.AttemptCount > 0 {
			return false, nil
		}
		earlier, err := r.cfg.Store.JobListGroup(ctx, &dispatch.JobListGroupParams{
			SubscriptionID: job.SubscriptionID, MessageGroup: job.MessageGroup,
			BeforeOrderKey: job.OrderKey(), Statuses: []dispatch.Status{dispatch.StatusPending, dispatch.StatusQueued},
			Limit: 100,
		})
		if err != nil {
			return false, fmt.Errorf("list earlier jobs of group: %w", err)
		}
		for _, e := range earlier {
			if e.AttemptCount > 0 {
				continue // has left the line: retries later
			}
			r.resendLostHead(ctx, e)
			now := r.cfg.NowFunc()
			due := now
			if e.Status == dispatch.StatusPending && e.NextAttemptAt != nil && e.NextAttemptAt.After(now) {
				due = *e.NextAttemptAt
			}
			return true, r.park(ctx, job, due, "waiting for earlier job "+e.ID+" of its group", "")
		}
	case dispatch.ModeImmediate:
	}
	return false, nil
}

// resendLostHead sends head, an earlier job of the group that holds a later
// one back, to the queue again when it looks lost: QUEUED, never attempted,
// unchanged for LostHeadAfter (see Config). Sending a job that is in fact
// still queued is harmless: within the queue's deduplication window the
// same (job, version) is dropped, and after it the router drops a message
// whose job moved on. Failures are logged; the stale-queued rescuer remains
// the safety net.
func (r *Router) resendLostHead(ctx context.Context, head *dispatch.Job) {
	if head.Status != dispatch.StatusQueued || head.AttemptCount > 0 || head.Delivery == dispatch.DeliveryPull {
		return
	}
	if r.cfg.NowFunc().Sub(head.UpdatedAt) < r.cfg.LostHeadAfter {
		return
	}
	r.cfg.Logger.InfoContext(ctx, "sending a lost head of its group again",
		"job_id", head.ID, "message_group", head.MessageGroup, "queued_at", head.UpdatedAt)
	if _, err := r.cfg.Enqueuer.Enqueue(ctx, []*dispatch.Job{head}); err != nil {
		r.cfg.Logger.WarnContext(ctx, "send lost head of group", "job_id", head.ID, "error", err)
	}
}

// prepareEventJob loads what an EVENT job's delivery needs. proceed is false
// when the job must not be delivered now (its subscription is paused or
// gone); the job was then moved accordingly.
func (r *Router) prepareEventJob(ctx context.Context, d *Delivery) (proceed bool, err error) {
	job := d.Job
	sub, err := r.cfg.Store.SubscriptionGetByID(ctx, job.SubscriptionID)
	if errors.Is(err, store.ErrNotFound) {
		if err := r.update(ctx, job, dispatch.StatusCancelled, stream.TypeDispatchCancelled, func(ev *stream.Event) {
			ev.Data.Error = "subscription deleted"
		}); err != nil {
			return false, err
		}
		return false, r.released(ctx, job)
	}
	if err != nil {
		return false, fmt.Errorf("get subscription %s: %w", job.SubscriptionID, err)
	}
	if sub.Status == subscription.StatusPaused {
		return false, r.park(ctx, job, r.cfg.NowFunc().Add(r.cfg.PausedRecheck), "subscription paused", dispatch.BlockedByPaused)
	}
	ev, err := r.cfg.Store.EventGetByID(ctx, job.EventID)
	if errors.Is(err, store.ErrNotFound) {
		// Cleanup keeps the events of unfinished jobs, so this is an
		// operator's retry of a finished job whose event has since passed
		// the event retention: nothing left to deliver.
		_, err := r.finish(ctx, job, Result{Err: Permanent(fmt.Errorf("event %s is no longer stored (past the event retention)", job.EventID))}, false)
		return false, err
	}
	if err != nil {
		return false, fmt.Errorf("get event %s: %w", job.EventID, err)
	}
	d.Event = ev
	now := r.cfg.NowFunc()
	for _, s := range sub.Secrets {
		if s.ExpiresAt != nil && !s.ExpiresAt.After(now) {
			continue
		}
		key, err := SecretKey(s.Value)
		if err != nil {
			continue
		}
		d.Keys = append(d.Keys, key)
	}
	// The subscription's current target and headers apply to every attempt.
	job.TargetURL = sub.Target
	job.Headers = sub.Headers
	return true, nil
}

// claim moves the job QUEUED → IN_PROGRESS under a lease.
func (r *Router) claim(ctx context.Context, job *dispatch.Job, now time.Time) error {
	if err := job.Transition(dispatch.StatusInProgress, now); err != nil {
		return fmt.Errorf("claim job: %w", store.ErrConflict)
	}
	job.AttemptCount++
	job.Worker = r.cfg.WorkerID
	lease := now.Add(time.Duration(job.TimeoutSeconds)*time.Second + r.cfg.Lease)
	job.LeaseExpiresAt = &lease
	ev := job.StatusEvent(r.cfg.NewID(), stream.TypeDispatchStarted, now)
	ev.Data.Worker = r.cfg.WorkerID
	if err := r.cfg.Store.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: job, Events: []stream.Event{ev}}); err != nil {
		return fmt.Errorf("claim job: %w", err)
	}
	return nil
}

// finish records an attempt's result and moves the job on: COMPLETED on
// success; PENDING with a backoff when retryable and allowed; ERROR
// otherwise. attempted is false when no request was sent (no attempt is
// recorded). On a version conflict (an operator cancelled the job
// meanwhile) the attempt is still recorded on the newer state.
func (r *Router) finish(ctx context.Context, job *dispatch.Job, res Result, attempted bool) (disposition, error) {
	start := r.cfg.NowFunc().Add(-res.Duration)
	attempt := dispatch.Attempt{
		Attempt: job.AttemptCount, StartedAt: start, DurationMs: res.Duration.Milliseconds(),
		StatusCode: res.StatusCode, ResponseBody: res.ResponseBody, Worker: r.cfg.WorkerID,
	}
	if res.Err != nil {
		attempt.Error = res.Err.Error()
	}
	for range 5 {
		now := r.cfg.NowFunc()
		next := job
		events := r.outcome(next, attempt, res, attempted, now)
		err := r.cfg.Store.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: next, Events: events})
		if err == nil {
			if r.cfg.OnAttemptFunc != nil && attempted {
				r.cfg.OnAttemptFunc(next, res)
			}
			return drop, r.released(ctx, next)
		}
		if !errors.Is(err, store.ErrConflict) {
			return leave, fmt.Errorf("record attempt: %w", err)
		}
		fresh, gerr := r.cfg.Store.JobGetByID(ctx, job.ID)
		if gerr != nil {
			return leave, fmt.Errorf("reload job after conflict: %w", gerr)
		}
		if fresh.Status == dispatch.StatusInProgress && fresh.Worker != r.cfg.WorkerID {
			return drop, nil // our lease expired and another worker owns it now
		}
		job = fresh
	}
	return leave, fmt.Errorf("record attempt of job %s: %w", job.ID, store.ErrConflict)
}

// released lets the next job of a BLOCK_ON_ERROR group go once job no longer
// holds it (COMPLETED or CANCELLED).
func (r *Router) released(ctx context.Context, job *dispatch.Job) error {
	if job.Mode != dispatch.ModeBlockOnError || job.MessageGroup == "" ||
		(job.Status != dispatch.StatusCompleted && job.Status != dispatch.StatusCancelled) {
		return nil
	}
	if _, err := r.releaser.ReleaseGroup(ctx, job.SubscriptionID, job.MessageGroup); err != nil {
		return fmt.Errorf("release group: %w", err)
	}
	return nil
}

// outcome applies an attempt's result to job (in place) and returns the
// status events to store with it.
func (r *Router) outcome(job *dispatch.Job, attempt dispatch.Attempt, res Result, attempted bool, now time.Time) []stream.Event {
	if attempted {
		job.Attempts = append(job.Attempts, attempt)
	}
	ev := func(typ string) stream.Event {
		e := job.StatusEvent(r.cfg.NewID(), typ, now)
		e.Data.StatusCode = res.StatusCode
		e.Data.DurationMs = res.Duration.Milliseconds()
		e.Data.Attempt = attempt.Attempt
		if res.Err != nil {
			e.Data.Error = res.Err.Error()
		}
		return e
	}
	if job.Status != dispatch.StatusInProgress && (attempted || job.Status != dispatch.StatusQueued) {
		// Cancelled (or otherwise moved) while the attempt ran: record the
		// attempt, keep the status.
		job.Touch(now)
		return nil
	}
	if res.Err == nil {
		_ = job.Transition(dispatch.StatusCompleted, now)
		job.LastError = nil
		return []stream.Event{ev(stream.TypeDispatchCompleted)}
	}
	msg := res.Err.Error()
	job.LastError = &msg
	if !IsPermanent(res.Err) && job.AttemptCount < job.MaxAttempts {
		wait := job.Retry.Backoff(job.AttemptCount, RetryAfterOf(res.Err), r.cfg.RandFunc)
		due := now.Add(wait)
		if job.MaxAgeSeconds <= 0 || !due.After(job.AgeDeadline()) {
			_ = job.Transition(dispatch.StatusPending, now)
			job.NextAttemptAt = &due
			return []stream.Event{ev(stream.TypeDispatchFailed)}
		}
	}
	var events []stream.Event
	if attempted {
		events = append(events, ev(stream.TypeDispatchFailed))
	}
	_ = job.Transition(dispatch.StatusError, now)
	return append(events, ev(stream.TypeDispatchDiscarded))
}

// handBack returns a claimed job that never started to PENDING, due at
// once, undoing its attempt count.
func (r *Router) handBack(ctx context.Context, job *dispatch.Job) (disposition, error) {
	now := r.cfg.NowFunc()
	if err := job.Transition(dispatch.StatusPending, now); err != nil {
		return drop, nil //nolint:nilerr // moved on meanwhile; nothing to hand back
	}
	job.AttemptCount--
	job.NextAttemptAt = &now
	ev := job.StatusEvent(r.cfg.NewID(), stream.TypeDispatchPending, now)
	ev.Data.Error = "router shutting down"
	if err := r.cfg.Store.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: job, Events: []stream.Event{ev}}); err != nil {
		return leave, fmt.Errorf("hand job back: %w", err)
	}
	return drop, nil
}

// park moves a QUEUED job to PENDING until `until`, marked with blockedBy.
func (r *Router) park(ctx context.Context, job *dispatch.Job, until time.Time, reason, blockedBy string) error {
	now := r.cfg.NowFunc()
	if err := job.Transition(dispatch.StatusPending, now); err != nil {
		return nil //nolint:nilerr // moved on meanwhile
	}
	job.NextAttemptAt = &until
	job.BlockedBy = blockedBy
	ev := job.StatusEvent(r.cfg.NewID(), stream.TypeDispatchPending, now)
	ev.Data.Error = reason
	if err := r.cfg.Store.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: job, Events: []stream.Event{ev}}); err != nil && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("park job: %w", err)
	}
	return nil
}

// update moves a job to status `to` with one status event.
func (r *Router) update(ctx context.Context, job *dispatch.Job, to dispatch.Status, typ string, edit func(*stream.Event)) error {
	now := r.cfg.NowFunc()
	if err := job.Transition(to, now); err != nil {
		return nil //nolint:nilerr // moved on meanwhile
	}
	ev := job.StatusEvent(r.cfg.NewID(), typ, now)
	if edit != nil {
		edit(&ev)
	}
	if err := r.cfg.Store.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: job, Events: []stream.Event{ev}}); err != nil && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("move job to %s: %w", to, err)
	}
	return nil
}
