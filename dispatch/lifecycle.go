package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/queue"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/stream"
)

// LifecycleStore is what the lifecycle verbs need of the store.
type LifecycleStore interface {
	EventIngest(ctx context.Context, p *EventIngestParams) ([]EventIngestResult, error)
	JobInsertMany(ctx context.Context, p *JobInsertManyParams) error
	JobGetByID(ctx context.Context, id string) (*Job, error)
	JobUpdate(ctx context.Context, p *JobUpdateParams) error
	JobList(ctx context.Context, p *JobListParams) (*JobPage, error)
	JobListDue(ctx context.Context, p *JobListDueParams) ([]*Job, error)
	JobListGroup(ctx context.Context, p *JobListGroupParams) ([]*Job, error)
}

// Lifecycle defaults.
const (
	// LostHeadAfterDefault is how long an earlier job of an ordered group
	// may stay QUEUED and never attempted, while a later job of its group
	// already reached a router, before it counts as lost (see
	// LifecycleConfig.LostHeadAfter).
	LostHeadAfterDefault = 10 * time.Second
	// BlockedRecheckDefault is how long a job held behind an unfinished
	// earlier job of its BLOCK_ON_ERROR group is parked. The blocker's
	// completion or cancellation releases it at once (ReleaseGroup); this is
	// the safety poll.
	BlockedRecheckDefault = 5 * time.Minute
	// PausedRecheckDefault is how long a job of a paused subscription is
	// parked before the router looks again. Resuming the subscription
	// releases its jobs at once (ReleaseSubscription); this is the safety
	// poll.
	PausedRecheckDefault = 5 * time.Minute
	// conflictRetries bounds how often a verb re-reads a job and applies
	// its change again after a concurrent writer won.
	conflictRetries = 5
)

// LifecycleConfig configures a Lifecycle.
type LifecycleConfig struct {
	// Store holds the jobs. Required.
	Store LifecycleStore
	// Queue carries QUEUED push jobs to the routers. Required.
	Queue queue.Queue
	// NewID issues status event ids. Required.
	NewID func() string
	// NowFunc is the clock. Default time.Now.
	NowFunc func() time.Time
	// RandFunc returns a float in [0,1) for backoff jitter. Default
	// math/rand/v2.
	RandFunc func() float64
	// LostHeadAfter is how old (since its last change) a never-attempted
	// QUEUED job holding back a later job of its ordered group must be for
	// the order gate to send it to the queue again: a later message of a
	// FIFO group arriving while an earlier one is neither in flight nor done
	// means the earlier message was lost (its sender died between the store
	// write and the send). Default LostHeadAfterDefault.
	LostHeadAfter time.Duration
	// BlockedRecheck is how long a blocked job is parked. Default
	// BlockedRecheckDefault.
	BlockedRecheck time.Duration
	// JSONMessages has the queue messages written in the JSON form that
	// releases before the binary form read (see MessageJSON): for a queue
	// shared with such instances during a rolling upgrade.
	JSONMessages bool
	// PausedRecheck is how long a job of a paused subscription is parked.
	// Default PausedRecheckDefault.
	PausedRecheck time.Duration
	// Circuit is the circuit breaking and auto-disable policy of push
	// subscriptions (circuit.go). The zero value turns both off.
	Circuit CircuitPolicy
	// OnAttemptFunc, when set, is called after each recorded attempt of a
	// subscription's job (a push outcome, a pull worker's report) with the
	// job as written, the attempt's record and its error (nil on success):
	// the endpoint health aggregates. It must not block.
	OnAttemptFunc func(j *Job, a Attempt, err error)
	// OnEventsFunc, when set, is called after every write of the lifecycle
	// that stored status events — a job's move (with the job as written),
	// a circuit's transition or a subscription's disabling (j nil) — with
	// those events: the operational events. It must not block.
	OnEventsFunc func(j *Job, events []stream.Event)
	// OnCircuitFunc, when set, is called with each CircuitEvent as it
	// happens (a probe started, succeeded or failed; a circuit opened or
	// closed; a subscription disabled): for metrics. It must not block.
	OnCircuitFunc func(ev CircuitEvent)
	Logger        *slog.Logger
}

// Lifecycle owns every change of a dispatch job after its creation. Each
// verb owns its whole write: the decision, the transition (status.go), the
// status events, the version-checked write and the conflict handling. The
// router, pull delivery, the pollers and the API call verbs; no other
// package writes a job. A Lifecycle is safe for concurrent use, and several
// instances may run verbs on the same jobs at once: every write is checked
// against the version it read, so of two racing writers exactly one wins and
// the other re-reads or gives way, as each verb documents.
type Lifecycle struct {
	cfg   LifecycleConfig
	enq   *Enqueuer
	clean *cleanCircuits // nil: every gate and success reads the circuit
	locks *circuitLocks  // circuit writes of one subscription take turns
	// releases holds the BLOCK_ON_ERROR groups whose release failed, to be
	// tried again (see release_retry.go).
	releases *releaseRetries
}

// NewLifecycle returns a Lifecycle.
func NewLifecycle(cfg LifecycleConfig) *Lifecycle {
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.LostHeadAfter <= 0 {
		cfg.LostHeadAfter = LostHeadAfterDefault
	}
	if cfg.BlockedRecheck <= 0 {
		cfg.BlockedRecheck = BlockedRecheckDefault
	}
	if cfg.PausedRecheck <= 0 {
		cfg.PausedRecheck = PausedRecheckDefault
	}
	cfg.Logger = cfg.Logger.With("component", "dispatch")
	lc := &Lifecycle{cfg: cfg, locks: newCircuitLocks(), releases: newReleaseRetries()}
	if cfg.Circuit.CleanTTL == 0 {
		cfg.Circuit.CleanTTL = CleanCircuitTTLDefault
	}
	if cfg.Circuit.CleanTTL > 0 {
		lc.clean = newCleanCircuits(cfg.Circuit.CleanTTL)
	}
	lc.cfg.Circuit.CleanTTL = cfg.Circuit.CleanTTL
	lc.enq = &Enqueuer{Queue: cfg.Queue, Store: cfg.Store, NewID: cfg.NewID, NowFunc: lc.now, Logger: cfg.Logger, JSONMessages: cfg.JSONMessages}
	return lc
}

// now is the lifecycle's clock in the precision the stores keep: UTC
// milliseconds.
func (lc *Lifecycle) now() time.Time { return lc.cfg.NowFunc().UTC().Truncate(time.Millisecond) }

// event returns a status event of type typ about j at now.
func (lc *Lifecycle) event(j *Job, typ string, now time.Time) stream.Event {
	return j.StatusEvent(lc.cfg.NewID(), typ, now)
}

// errUnchanged, returned by a change function, means the job as read needs
// no write; mutate then returns it as it is.
var errUnchanged = errors.New("job unchanged")

// changeFunc applies a verb's change to j at now and returns the status
// events to store with it.
type changeFunc func(j *Job, now time.Time) ([]stream.Event, error)

// mutate applies change to j and writes it, version-checked. When another
// writer changed the job meanwhile it re-reads the job and applies change
// to the fresh state, up to conflictRetries times, so change must decide
// from the job it is given alone. It returns the job as written (or as read,
// when change returned errUnchanged).
func (lc *Lifecycle) mutate(ctx context.Context, j *Job, change changeFunc) (*Job, error) {
	for range conflictRetries {
		events, err := change(j, lc.now())
		if errors.Is(err, errUnchanged) {
			return j, nil
		}
		if err != nil {
			return nil, err
		}
		err = lc.cfg.Store.JobUpdate(ctx, &JobUpdateParams{Job: j, Events: events, Outbox: lc.jobOutbox(j, events)})
		if err == nil {
			lc.written(j, events)
			return j, nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return nil, fmt.Errorf("write job %s: %w", j.ID, err)
		}
		if j, err = lc.cfg.Store.JobGetByID(ctx, j.ID); err != nil {
			return nil, fmt.Errorf("re-read job after conflict: %w", err)
		}
	}
	return nil, fmt.Errorf("write job %s: %w", j.ID, store.ErrConflict)
}

// tryWrite writes j with events once and reports whether it won: a
// conflict or a job deleted meanwhile is not an error, the other writer
// having moved the job on.
func (lc *Lifecycle) tryWrite(ctx context.Context, j *Job, events []stream.Event) (bool, error) {
	err := lc.cfg.Store.JobUpdate(ctx, &JobUpdateParams{Job: j, Events: events, Outbox: lc.jobOutbox(j, events)})
	switch {
	case err == nil:
		lc.written(j, events)
		return true, nil
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound):
		return false, nil
	default:
		return false, fmt.Errorf("write job %s: %w", j.ID, err)
	}
}

// operationalTypePrefix is the reserved prefix of the gateway's own event
// types (package ingest/operational): a job of such an event is news of the
// news, and its discard produces no operational event.
const operationalTypePrefix = "hooklane."

// jobOutbox returns the status events of a job write that go to the
// operational outbox: its dispatch.discarded event, when
// CircuitPolicy.DurableEvents is set and the job's event is not itself an
// operational one; else none.
func (lc *Lifecycle) jobOutbox(j *Job, events []stream.Event) []stream.Event {
	if !lc.cfg.Circuit.DurableEvents || strings.HasPrefix(j.Code, operationalTypePrefix) {
		return nil
	}
	var out []stream.Event
	for i := range events {
		if events[i].Type == stream.TypeDispatchDiscarded {
			out = append(out, events[i])
		}
	}
	return out
}

// written tells OnEventsFunc about a write's status events.
func (lc *Lifecycle) written(j *Job, events []stream.Event) {
	if lc.cfg.OnEventsFunc != nil && len(events) > 0 {
		lc.cfg.OnEventsFunc(j, events)
	}
}

// Get returns one job (store.ErrNotFound when there is none).
func (lc *Lifecycle) Get(ctx context.Context, id string) (*Job, error) {
	j, err := lc.cfg.Store.JobGetByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("get job %s: %w", id, err)
	}
	return j, nil
}

// Send puts stored QUEUED jobs on the queue, in the order given (callers
// keep each group's order). A job whose send fails goes back to PENDING,
// due at once, for the pending poller. It returns how many jobs went back;
// the error says why the queue refused them, or that even that move failed
// (the stale-queued rescuer then finds the job). Events, optional, are the
// jobs' events when the caller has them: each job's message then carries
// its event, which its delivery need not read (see Message).
func (lc *Lifecycle) Send(ctx context.Context, jobs []*Job, events ...*event.Event) (int, error) {
	var push []*Job
	for _, j := range jobs {
		if j.Status == StatusQueued && j.Delivery != DeliveryPull {
			push = append(push, j)
		}
	}
	if len(push) == 0 {
		return 0, nil
	}
	return lc.enq.Enqueue(ctx, push, events...)
}

// Ingest stores accepted events with the jobs their acceptance creates and
// those jobs' status events (Store.EventIngest): the ingest half of job
// creation, as Insert is the rest.
func (lc *Lifecycle) Ingest(ctx context.Context, p *EventIngestParams) ([]EventIngestResult, error) {
	res, err := lc.cfg.Store.EventIngest(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("ingest events: %w", err)
	}
	return res, nil
}

// Insert stores new jobs with their creation status events (see
// CreationEvents) and the given extra status events, without sending them.
// Inserting a job whose id is stored already changes nothing (ids of event
// jobs are deterministic, see NewEventJob), so a repeated insert is
// harmless.
func (lc *Lifecycle) Insert(ctx context.Context, jobs []*Job, extra ...stream.Event) error {
	now := lc.now()
	events := extra
	for _, j := range jobs {
		events = append(events, lc.CreationEvents(j, now)...)
	}
	if err := lc.cfg.Store.JobInsertMany(ctx, &JobInsertManyParams{Jobs: jobs, Events: events}); err != nil {
		return fmt.Errorf("store jobs: %w", err)
	}
	return nil
}

// Create inserts new jobs (see Insert) and sends the QUEUED push ones. The
// jobs are stored when it returns nil, even if their send failed (they then
// wait PENDING for the pending poller).
func (lc *Lifecycle) Create(ctx context.Context, jobs []*Job) error {
	if err := lc.Insert(ctx, jobs); err != nil {
		return err
	}
	if n, err := lc.Send(ctx, jobs); n > 0 {
		lc.cfg.Logger.WarnContext(ctx, "jobs left pending after queue send failure", "jobs", n, "error", err)
	}
	return nil
}

// CreationEvents returns the status events of a job's creation:
// dispatch.created, and dispatch.queued when it is created QUEUED.
func (lc *Lifecycle) CreationEvents(j *Job, now time.Time) []stream.Event {
	events := []stream.Event{lc.event(j, stream.TypeDispatchCreated, now)}
	if j.Status == StatusQueued {
		events = append(events, lc.event(j, stream.TypeDispatchQueued, now))
	}
	return events
}

// NotAllowedError is returned when an operator asks for a move the job's status
// does not allow (retry of a job that is not ERROR or CANCELLED, cancel of a
// finished one). It matches ErrInvalidTransition; the API answers 409.
type NotAllowedError struct {
	Status Status
	// Verb is what was asked: "retried", "cancelled", "completed", ...
	Verb string
}

func (e *NotAllowedError) Error() string {
	return fmt.Sprintf("a %s job cannot be %s", e.Status, e.Verb)
}

// Is makes errors.Is(err, ErrInvalidTransition) true.
func (e *NotAllowedError) Is(target error) bool { return target == ErrInvalidTransition }
