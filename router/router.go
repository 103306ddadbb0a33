package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/ingest"
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
	// before the router looks again.
	PausedRecheckDefault = 15 * time.Second
)

// Store is what the router needs of the store.
type Store interface {
	JobGetByID(ctx context.Context, id string) (*dispatch.Job, error)
	JobUpdate(ctx context.Context, p *dispatch.JobUpdateParams) error
	EventGetByID(ctx context.Context, id string) (*ingest.StoredEvent, error)
	SubscriptionGetByID(ctx context.Context, id string) (*subscription.Subscription, error)
}

// Config configures a Router.
type Config struct {
	Queue    queue.Queue
	Store    Store
	Pools    *Pools
	Mediator *Mediator
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
	wg       sync.WaitGroup
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
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Logger = cfg.Logger.With("component", "router")
	return &Router{cfg: cfg, inFlight: make(chan struct{}, cfg.MaxInFlight)}
}

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
		for _, m := range msgs {
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				defer func() { <-r.inFlight }()
				// A delivery that has started finishes even when ctx ends
				// (shutdown), bounded by its own timeout.
				r.handle(context.WithoutCancel(ctx), ctx, m)
			}()
		}
	}
}

// handle processes one message: claim the job, deliver it, record the
// outcome, delete the message. Errors are logged here, once.
func (r *Router) handle(ctx, runCtx context.Context, m queue.Message) {
	jobID := string(m.Body)
	log := r.cfg.Logger.With("job_id", jobID)
	done, err := r.process(ctx, runCtx, jobID)
	if err != nil {
		log.ErrorContext(ctx, "job processing failed", "error", err)
	}
	if !done {
		// Leave the message to its visibility timeout; the job is safe in
		// the store and the pollers recover it if the message is lost.
		return
	}
	if err := r.cfg.Queue.Delete(ctx, m.ReceiptHandle); err != nil && !errors.Is(err, queue.ErrInvalidReceipt) {
		log.WarnContext(ctx, "queue delete failed", "error", err)
	}
}

// process runs one job. done is true when the message can be deleted: the
// job reached a stored state that no longer needs this message.
func (r *Router) process(ctx, runCtx context.Context, jobID string) (done bool, err error) {
	job, err := r.cfg.Store.JobGetByID(ctx, jobID)
	if errors.Is(err, store.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("get job: %w", err)
	}
	if job.Status != dispatch.StatusQueued || job.Delivery == dispatch.DeliveryPull {
		return true, nil // handled already, cancelled, or not ours to push
	}
	if runCtx.Err() != nil {
		return false, nil // shutting down: leave it for another router
	}
	d := &Delivery{Job: job}
	if job.Kind == dispatch.KindEvent {
		proceed, err := r.prepareEventJob(ctx, d)
		if err != nil || !proceed {
			return err == nil, err
		}
	} else {
		key, err := SecretKey(job.Secret)
		if err != nil {
			return r.finish(ctx, job, Result{Err: Permanent(fmt.Errorf("task job secret: %w", err))}, false)
		}
		d.Keys = [][]byte{key}
	}
	now := r.cfg.NowFunc()
	if expired(job, now) {
		return r.finish(ctx, job, Result{Err: Permanent(errors.New("max age passed before delivery"))}, false)
	}
	if err := r.claim(ctx, job, now); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return true, nil // someone else moved it; their message or poller follows
		}
		return false, err
	}
	pool, err := r.cfg.Pools.Get(ctx, job.DispatchPoolID)
	if err != nil {
		return false, fmt.Errorf("get pool: %w", err)
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

// prepareEventJob loads what an EVENT job's delivery needs. proceed is false
// when the job must not be delivered now (its subscription is paused or
// gone); the job was then moved accordingly.
func (r *Router) prepareEventJob(ctx context.Context, d *Delivery) (proceed bool, err error) {
	job := d.Job
	sub, err := r.cfg.Store.SubscriptionGetByID(ctx, job.SubscriptionID)
	if errors.Is(err, store.ErrNotFound) {
		return false, r.update(ctx, job, dispatch.StatusCancelled, stream.TypeDispatchCancelled, func(ev *stream.Event) {
			ev.Data.Error = "subscription deleted"
		})
	}
	if err != nil {
		return false, fmt.Errorf("get subscription %s: %w", job.SubscriptionID, err)
	}
	if sub.Status == subscription.StatusPaused {
		return false, r.park(ctx, job, r.cfg.NowFunc().Add(PausedRecheckDefault), "subscription paused")
	}
	ev, err := r.cfg.Store.EventGetByID(ctx, job.EventID)
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

func expired(job *dispatch.Job, now time.Time) bool {
	return job.MaxAgeSeconds > 0 && now.After(job.CreatedAt.Add(time.Duration(job.MaxAgeSeconds)*time.Second))
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
func (r *Router) finish(ctx context.Context, job *dispatch.Job, res Result, attempted bool) (bool, error) {
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
			return true, nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return false, fmt.Errorf("record attempt: %w", err)
		}
		fresh, gerr := r.cfg.Store.JobGetByID(ctx, job.ID)
		if gerr != nil {
			return false, fmt.Errorf("reload job after conflict: %w", gerr)
		}
		if fresh.Status == dispatch.StatusInProgress && fresh.Worker != r.cfg.WorkerID {
			return true, nil // our lease expired and another worker owns it now
		}
		job = fresh
	}
	return false, fmt.Errorf("record attempt of job %s: %w", job.ID, store.ErrConflict)
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
		job.UpdatedAt = now
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
		deadline := job.CreatedAt.Add(time.Duration(job.MaxAgeSeconds) * time.Second)
		if job.MaxAgeSeconds <= 0 || !due.After(deadline) {
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
func (r *Router) handBack(ctx context.Context, job *dispatch.Job) (bool, error) {
	now := r.cfg.NowFunc()
	if err := job.Transition(dispatch.StatusPending, now); err != nil {
		return false, nil //nolint:nilerr // moved on meanwhile; nothing to hand back
	}
	job.AttemptCount--
	job.NextAttemptAt = &now
	ev := job.StatusEvent(r.cfg.NewID(), stream.TypeDispatchPending, now)
	ev.Data.Error = "router shutting down"
	if err := r.cfg.Store.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: job, Events: []stream.Event{ev}}); err != nil {
		return false, fmt.Errorf("hand job back: %w", err)
	}
	return true, nil
}

// park moves a QUEUED job to PENDING until `until`.
func (r *Router) park(ctx context.Context, job *dispatch.Job, until time.Time, reason string) error {
	now := r.cfg.NowFunc()
	if err := job.Transition(dispatch.StatusPending, now); err != nil {
		return nil //nolint:nilerr // moved on meanwhile
	}
	job.NextAttemptAt = &until
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
