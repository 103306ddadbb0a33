package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/queue"
	"github.com/hooklane/hooklane/stream"
)

// EnqueuerStore is what the Enqueuer needs of the store.
type EnqueuerStore interface {
	JobUpdate(ctx context.Context, p *JobUpdateParams) error
}

// Enqueuer puts QUEUED jobs on the queue. The store stays the source of
// truth: a job whose send fails goes back to PENDING (due at once), so the
// pending poller sends it again; if even that write fails, the stale-queued
// poller finds the job later. Nothing is lost either way.
//
// When a send fails as a whole (the queue is unreachable), the Enqueuer
// stops trying for a cooldown that doubles from BreakerCooldownFirst up to
// BreakerCooldownMax: meanwhile jobs go straight back to PENDING, so ingest
// keeps answering at store speed instead of waiting on the queue client's
// retries for every request; the first send after the cooldown probes the
// queue. The zero value of the breaker is closed.
type Enqueuer struct {
	Queue   queue.Queue
	Store   EnqueuerStore
	NewID   func() string
	NowFunc func() time.Time
	Logger  *slog.Logger
	// JSONMessages writes the messages in the JSON form the releases
	// before the binary form read (MessageJSON), for a rolling upgrade.
	JSONMessages bool

	mu        sync.Mutex
	openUntil time.Time
	cooldown  time.Duration
	// lastErr is the send failure that opened the breaker.
	lastErr error
}

// Breaker cooldowns: long enough to spare producers the wait on a queue
// that is down, short enough that a recovered queue is used again within
// seconds (the pending poller sends what waited meanwhile).
const (
	BreakerCooldownFirst = time.Second
	BreakerCooldownMax   = 30 * time.Second
)

func (e *Enqueuer) logger() *slog.Logger {
	if e.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Logger
}

func (e *Enqueuer) now() time.Time {
	if e.NowFunc == nil {
		return time.Now()
	}
	return e.NowFunc()
}

// open reports whether sends are skipped at now, and if so the failure
// that opened the breaker.
func (e *Enqueuer) open(now time.Time) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return now.Before(e.openUntil), e.lastErr
}

// trip opens the breaker after a failed send.
func (e *Enqueuer) trip(now time.Time, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cooldown = min(max(e.cooldown*2, BreakerCooldownFirst), BreakerCooldownMax)
	e.openUntil = now.Add(e.cooldown)
	e.lastErr = err
}

// reset closes the breaker after a send went through.
func (e *Enqueuer) reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cooldown = 0
	e.openUntil = time.Time{}
}

// EnqueueTimeout bounds one Enqueue call: its sends and the writes that
// move the jobs it could not send back to PENDING.
const EnqueueTimeout = 15 * time.Second

// AttributeTraceParent is the queue message attribute that carries a job's
// TraceParent.
const AttributeTraceParent = "traceparent"

// Enqueue sends the jobs, which must be stored and QUEUED, in batches of
// queue.MaxBatch, in the order given (group order must be preserved by the
// caller's ordering). Events are the jobs' events the caller has at hand:
// a job's message carries its event when it is among them (see Message).
// It returns the number of jobs it had to move back to
// PENDING and, exactly when that number is not zero, an error that says
// why: the queue's errors (or that the breaker skipped the queue, with the
// failure that opened it), joined with any store error that kept a job
// QUEUED. Callers log it; nothing is lost either way. The call outlives
// ctx's cancellation and deadline (see EnqueueTimeout).
func (e *Enqueuer) Enqueue(ctx context.Context, jobs []*Job, events ...*event.Event) (int, error) {
	// The jobs are stored QUEUED whatever becomes of the caller, so their
	// sends and any move back to PENDING do not end with the caller's
	// context (a router's finishing deadline, a producer that hung up): a
	// job left QUEUED without a message would wait for the stale-queued
	// poller. EnqueueTimeout bounds them instead.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), EnqueueTimeout)
	defer cancel()
	var byID map[string]*event.Event
	if len(events) > 0 {
		byID = make(map[string]*event.Event, len(events))
		for _, ev := range events {
			byID[ev.ID] = ev
		}
	}
	var failed []*Job
	var errs []error
	skipped, entryErrs := false, 0
	for start := 0; start < len(jobs); start += queue.MaxBatch {
		batch := jobs[start:min(start+queue.MaxBatch, len(jobs))]
		msgs := make([]queue.OutMessage, len(batch))
		for i, j := range batch {
			if e.JSONMessages {
				msgs[i] = MessageJSON(j, byID[j.EventID])
			} else {
				msgs[i] = Message(j, byID[j.EventID])
			}
		}
		if open, cause := e.open(e.now()); open {
			if !skipped {
				errs = append(errs, fmt.Errorf("queue send skipped while the queue recovers: %w", cause))
				skipped = true
			}
			failed = append(failed, batch...)
			continue
		}
		results, err := e.Queue.SendBatch(ctx, msgs)
		if err != nil {
			if ctx.Err() == nil {
				e.trip(e.now(), err)
			}
			e.logger().WarnContext(ctx, "queue send failed", "jobs", len(batch), "error", err)
			errs = append(errs, fmt.Errorf("send %d jobs: %w", len(batch), err))
			failed = append(failed, batch...)
			continue
		}
		e.reset()
		for i, j := range batch {
			if i >= len(results) || results[i].Err == nil {
				continue // a result the queue did not give is taken as sent: the rescuer finds it if not
			}
			rerr := results[i].Err
			e.logger().WarnContext(ctx, "queue send entry failed", "job_id", j.ID, "error", rerr)
			// The first entry's error stands for the others: one line per
			// job would flood the callers' logs.
			if entryErrs == 0 {
				errs = append(errs, fmt.Errorf("send job %s: %w", j.ID, rerr))
			}
			entryErrs++
			failed = append(failed, j)
		}
	}
	if entryErrs > 1 {
		errs = append(errs, fmt.Errorf("and %d more jobs failed to send", entryErrs-1))
	}
	for _, j := range failed {
		if err := e.backToPending(ctx, j); err != nil {
			errs = append(errs, err)
		}
	}
	return len(failed), errors.Join(errs...)
}

// backToPending moves a job whose send failed from QUEUED to PENDING, due
// at once. A job that moved on meanwhile is left alone.
func (e *Enqueuer) backToPending(ctx context.Context, j *Job) error {
	now := e.now()
	if err := j.Transition(StatusPending, now); err != nil {
		return nil //nolint:nilerr // the job moved on; nothing to undo
	}
	due := now
	j.NextAttemptAt = &due
	ev := j.StatusEvent(e.NewID(), stream.TypeDispatchPending, now)
	ev.Data.Error = "queue send failed"
	if err := e.Store.JobUpdate(ctx, &JobUpdateParams{Job: j, Events: []stream.Event{ev}}); err != nil {
		return fmt.Errorf("return job %s to pending: %w", j.ID, err)
	}
	return nil
}
