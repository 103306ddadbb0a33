// Package pull is pull delivery (API.md §10): workers poll for the jobs of
// a pull subscription instead of the router pushing them. It is built on
// the same lifecycle verbs as push (package dispatch): a claim is
// dispatch.Lifecycle.Claim behind the same order gate, a worker's report is
// dispatch.Lifecycle.Report with the same retry decision, and a claim whose
// lease expires is recovered by the same rescuer. The API only decodes the
// requests and encodes the answers.
package pull

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
)

// Limits of pull delivery (API.md §10).
const (
	// MaxClaim is the most jobs one claim hands out.
	MaxClaim = 100
	// MaxWait is the longest a claim long-polls.
	MaxWait = 30 * time.Second
	// LeaseDefault is a pulled job's lease when Config.Lease is zero.
	LeaseDefault = 2 * time.Minute
	// pollInterval is how often a long-polling claim re-reads the store.
	// The store is the only source every instance shares (a job may become
	// due through another instance's ingest or the pending poller), so the
	// claim polls it on this short interval, bounded by the wait; when the
	// status stream hub is configured, a dispatch.queued/created event of
	// the subscription wakes it at once.
	pollInterval = 50 * time.Millisecond
	// pausedWait is the most a claim on a paused subscription waits before
	// answering that nothing is due.
	pausedWait = time.Second
	// scanLimit bounds the due jobs one claim round examines.
	scanLimit = 500
	// workerSeenWindow is how long Workers remembers a worker.
	workerSeenWindow = time.Hour
	// clockAllowance is how far ahead of this instance's clock a QUEUED
	// job's UpdatedAt may be for a claim to see it.
	clockAllowance = time.Hour
	// workersPage is the page size Workers reads jobs in flight with.
	workersPage = 500
)

// ErrNotPull is returned by Claim for a subscription that does not use
// pull delivery.
var ErrNotPull = errors.New("the subscription does not use pull delivery")

// Store is what pull delivery reads of the store.
type Store interface {
	JobListDue(ctx context.Context, p *dispatch.JobListDueParams) ([]*dispatch.Job, error)
	JobList(ctx context.Context, p *dispatch.JobListParams) (*dispatch.JobPage, error)
	EventGetByID(ctx context.Context, id string) (*event.Event, error)
	SubscriptionGetByID(ctx context.Context, id string) (*subscription.Subscription, error)
}

// Lifecycle is what pull delivery needs of the job lifecycle
// (*dispatch.Lifecycle).
type Lifecycle interface {
	ClaimGated(ctx context.Context, j *dispatch.Job, p dispatch.GateParams) (dispatch.GateResult, error)
	Report(ctx context.Context, id, worker, action string, o dispatch.Outcome) (*dispatch.Job, bool, error)
	Heartbeat(ctx context.Context, id, worker string, lease time.Duration) (*dispatch.Job, error)
}

// Config configures a Service.
type Config struct {
	Store     Store
	Lifecycle Lifecycle
	// Hub, when set, wakes long-polling claims as soon as a job of their
	// subscription is queued anywhere the hub hears of.
	Hub *stream.Hub
	// Lease is how long a claim lasts (HOOKLANE_LEASE). Default
	// LeaseDefault.
	Lease   time.Duration
	NowFunc func() time.Time
	// TracerProvider, when set, records each claim and each worker's
	// report as a span of the job's trace (see tracing.go). Nil is tracing
	// off.
	TracerProvider trace.TracerProvider
}

// Service serves pull workers. It is safe for concurrent use.
type Service struct {
	cfg     Config
	workers *workerRegistry
	due     *dueSignal
	// tracer is nil when tracing is off.
	tracer trace.Tracer
}

// New returns a Service.
func New(cfg Config) *Service {
	if cfg.Lease <= 0 {
		cfg.Lease = LeaseDefault
	}
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	s := &Service{cfg: cfg, workers: newWorkerRegistry(), due: &dueSignal{}}
	if cfg.TracerProvider != nil {
		s.tracer = cfg.TracerProvider.Tracer(tracerName)
	}
	return s
}

func (s *Service) now() time.Time { return s.cfg.NowFunc().UTC().Truncate(time.Millisecond) }

// Lease is how long a claim lasts.
func (s *Service) Lease() time.Duration { return s.cfg.Lease }

// NotifyDue wakes this instance's long-polling claims: call it after
// storing a due pull job.
func (s *Service) NotifyDue() { s.due.broadcast() }

// ClaimParams are the arguments of Claim.
type ClaimParams struct {
	// Worker is the claiming worker's id ("host:pid"). Required.
	Worker string
	// Max is the most jobs to claim, 1 to MaxClaim.
	Max int
	// Wait is how long to long-poll when none is due, at most MaxWait.
	Wait time.Duration
	// Tags narrows to jobs whose event type or any extension value equals
	// one of them (ANY matches); empty does not narrow.
	Tags []string
}

// Claimed is one claimed job with its event (nil for a TASK job).
type Claimed struct {
	Job   *dispatch.Job
	Event *cloudevent.Event
}

// Claim claims up to p.Max due jobs of pull subscription subID for
// p.Worker, long-polling up to p.Wait when none is due. It returns no job
// (and no error) when the wait ended empty or ctx ended.
func (s *Service) Claim(ctx context.Context, subID string, p ClaimParams) ([]Claimed, error) {
	sub, err := s.cfg.Store.SubscriptionGetByID(ctx, subID)
	if err != nil {
		return nil, fmt.Errorf("get subscription %s: %w", subID, err)
	}
	if sub.Delivery != dispatch.DeliveryPull {
		return nil, ErrNotPull
	}
	s.workers.touch(p.Worker, s.now())
	if sub.Status == subscription.StatusPaused {
		// A paused subscription — or one whose client is suspended (API.md
		// §11; the store given to Config shows it PAUSED) — hands out
		// nothing: its jobs wait. The claim waits up to pausedWait of its
		// long poll, so a worker polling in a loop does not spin, and a
		// resume is seen at its next claim.
		return nil, waitOut(ctx, min(p.Wait, pausedWait))
	}
	deadline := time.Now().Add(p.Wait)

	var wake <-chan *stream.Event
	if s.cfg.Hub != nil && p.Wait > 0 {
		ch, cancel := s.cfg.Hub.Subscribe(func(e *stream.Event) bool {
			return e.Data.Subscription == sub.Code &&
				(e.Type == stream.TypeDispatchQueued || e.Type == stream.TypeDispatchCreated || e.Type == stream.TypeDispatchCompleted)
		})
		defer cancel()
		wake = ch
	}
	var ticker *time.Ticker
	for {
		due := s.due.wait()
		items, err := s.claimRound(ctx, sub.ID, p)
		if err != nil {
			return nil, err
		}
		if len(items) > 0 {
			return items, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil
		}
		if ticker == nil {
			ticker = time.NewTicker(pollInterval)
			defer ticker.Stop()
		}
		timer := time.NewTimer(left)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, nil
		case _, ok := <-wake:
			if !ok {
				wake = nil // the hub dropped us: fall back to polling
			}
		case <-due:
		case <-ticker.C:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// waitOut waits d or until ctx ends.
func waitOut(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	return nil
}

// claimRound claims up to p.Max due jobs of one subscription: oldest first,
// within an ordered message group only its head and only when none of the
// group is in flight. Each claim is a version-checked write, so of two
// racing workers exactly one gets a job.
func (s *Service) claimRound(ctx context.Context, subID string, p ClaimParams) ([]Claimed, error) {
	// Every QUEUED pull job is due; the cutoff only orders the list. It is
	// ahead of this instance's clock so that a job whose UpdatedAt runs
	// ahead (another instance's clock, or the job's Lamport stamps, see
	// dispatch.Job.StatusEvent) is not left out.
	due, err := s.cfg.Store.JobListDue(ctx, &dispatch.JobListDueParams{
		Status: dispatch.StatusQueued, Now: s.now().Add(clockAllowance), Limit: scanLimit,
		SubscriptionID: subID, Delivery: dispatch.DeliveryPull,
	})
	if err != nil {
		return nil, fmt.Errorf("list due pull jobs: %w", err)
	}
	events := map[string]*cloudevent.Event{}
	decided := map[string]bool{}
	var out []Claimed
	for _, j := range due {
		if len(out) >= p.Max {
			break
		}
		ev, err := s.jobEvent(ctx, j, events)
		if err != nil {
			return nil, err
		}
		if len(p.Tags) > 0 && !matchTags(j, ev, p.Tags) {
			continue
		}
		if j.Mode.Ordered() && j.MessageGroup != "" {
			if decided[j.MessageGroup] {
				continue // one job per group and claim; the rest wait their turn
			}
			decided[j.MessageGroup] = true
		}
		// The order gate (a job of its group in flight holds it too), then
		// the claim; no admission, and no circuit for pull jobs.
		start := time.Now()
		res, err := s.cfg.Lifecycle.ClaimGated(ctx, j, dispatch.GateParams{
			Claim: dispatch.ClaimParams{Worker: p.Worker, Lease: s.cfg.Lease, Pull: true},
		})
		if err != nil {
			return nil, fmt.Errorf("claim job %s: %w", j.ID, err)
		}
		if res == dispatch.GateClaimed {
			s.traceJob(ctx, "pull.claim", start, j, p.Worker, trace.SpanKindConsumer, nil)
			out = append(out, Claimed{Job: j, Event: ev})
		}
		// Otherwise: not its turn, discarded for max age, or another worker
		// got it first.
	}
	return out, nil
}

// jobEvent returns the event of an EVENT job (nil for a TASK job), cached
// in seen.
//
//nolint:nilnil // a TASK job has no event: nil event, nil error
func (s *Service) jobEvent(ctx context.Context, j *dispatch.Job, seen map[string]*cloudevent.Event) (*cloudevent.Event, error) {
	if j.EventID == "" {
		return nil, nil
	}
	if ev, ok := seen[j.EventID]; ok {
		return ev, nil
	}
	se, err := s.cfg.Store.EventGetByID(ctx, j.EventID)
	if err != nil {
		return nil, fmt.Errorf("get event of job %s: %w", j.ID, err)
	}
	seen[j.EventID] = &se.Event
	return &se.Event, nil
}

// matchTags reports whether the job's event type, or any extension value of
// its event, equals one of tags.
func matchTags(j *dispatch.Job, ev *cloudevent.Event, tags []string) bool {
	if slices.Contains(tags, j.Code) {
		return true
	}
	if ev == nil {
		return false
	}
	if slices.Contains(tags, ev.Type) {
		return true
	}
	for _, v := range ev.Extensions {
		if slices.Contains(tags, fmt.Sprint(v)) {
			return true
		}
	}
	return false
}

// Report is a worker's report on a job it holds.
type Report struct {
	WorkerID        string
	ExecutionTimeMs int64
	StatusCode      int
	// ErrorMessage says why a failed attempt failed.
	ErrorMessage string
}

// Complete records that the worker delivered the job. A repeat of the same
// report answers the job as it is. dispatch.ErrNotHolder when another
// worker holds the job, a *dispatch.NotAllowedError when it is not
// IN_PROGRESS.
func (s *Service) Complete(ctx context.Context, id string, r Report) (*dispatch.Job, error) {
	s.workers.touch(r.WorkerID, s.now())
	start := time.Now()
	j, _, err := s.cfg.Lifecycle.Report(ctx, id, r.WorkerID, dispatch.ActionCompleted, dispatch.Outcome{
		Attempt: dispatch.Attempt{DurationMs: r.ExecutionTimeMs, StatusCode: r.StatusCode},
	})
	if err == nil {
		s.traceJob(ctx, "pull.complete", start, j, r.WorkerID, trace.SpanKindInternal, nil)
	}
	return j, err
}

// Fail records that the worker's attempt failed; the job retries under its
// policy (the same decision as push) or ends in ERROR. Errors as Complete.
func (s *Service) Fail(ctx context.Context, id string, r Report) (*dispatch.Job, error) {
	s.workers.touch(r.WorkerID, s.now())
	msg := r.ErrorMessage
	if msg == "" {
		msg = "failed"
	}
	start := time.Now()
	failure := errors.New(msg)
	j, _, err := s.cfg.Lifecycle.Report(ctx, id, r.WorkerID, dispatch.ActionFailed, dispatch.Outcome{
		Attempt: dispatch.Attempt{DurationMs: r.ExecutionTimeMs, StatusCode: r.StatusCode},
		Err:     failure,
	})
	if err == nil {
		s.traceJob(ctx, "pull.fail", start, j, r.WorkerID, trace.SpanKindInternal, failure)
	}
	return j, err
}

// Heartbeat extends the lease of a job the worker holds and returns when it
// now expires. dispatch.ErrNotHolder when it does not hold it.
func (s *Service) Heartbeat(ctx context.Context, id, worker string) (time.Time, error) {
	s.workers.touch(worker, s.now())
	j, err := s.cfg.Lifecycle.Heartbeat(ctx, id, worker, s.cfg.Lease)
	if err != nil {
		return time.Time{}, err
	}
	return *j.LeaseExpiresAt, nil
}

// Worker is a pull worker seen lately.
type Worker struct {
	WorkerID string
	// InFlight are the ids of the jobs it holds, sorted.
	InFlight   []string
	LastSeenAt time.Time
}

// Workers returns the workers this instance saw in the last hour, and
// every worker holding a pull job, sorted by worker id.
func (s *Service) Workers(ctx context.Context) ([]Worker, error) {
	seen := s.workers.since(s.now().Add(-workerSeenWindow))
	inFlight := map[string][]string{}
	p := &dispatch.JobListParams{Status: dispatch.StatusInProgress, Limit: workersPage}
	for {
		pg, err := s.cfg.Store.JobList(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("list jobs in flight: %w", err)
		}
		for _, j := range pg.Jobs {
			if j.Delivery != dispatch.DeliveryPull || j.Worker == "" {
				continue
			}
			inFlight[j.Worker] = append(inFlight[j.Worker], j.ID)
			for _, a := range j.Attempts {
				if a.Worker == j.Worker && a.StartedAt.After(seen[j.Worker]) {
					seen[j.Worker] = a.StartedAt
				}
			}
		}
		if pg.NextCursor == "" {
			break
		}
		p.Cursor = pg.NextCursor
	}
	out := make([]Worker, 0, len(seen))
	for id, t := range seen {
		ids := inFlight[id]
		if ids == nil {
			ids = []string{}
		}
		slices.Sort(ids)
		out = append(out, Worker{WorkerID: id, InFlight: ids, LastSeenAt: t})
	}
	slices.SortFunc(out, func(a, b Worker) int { return cmp.Compare(a.WorkerID, b.WorkerID) })
	return out, nil
}

// workerRegistry remembers when each pull worker was last seen by this
// instance.
type workerRegistry struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

func newWorkerRegistry() *workerRegistry {
	return &workerRegistry{seen: map[string]time.Time{}}
}

// workersMax bounds the workers one instance remembers: worker ids are
// chosen by clients, and a registry without a bound would grow with every
// id ever sent. Past it, the longest silent worker is forgotten (a worker
// holding a job is still listed by Workers, from the store).
const workersMax = 10_000

// touch records activity of worker id at now.
func (r *workerRegistry) touch(id string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, known := r.seen[id]; !known && len(r.seen) >= workersMax {
		oldest, at := "", now
		for w, t := range r.seen {
			if t.Before(at) || oldest == "" {
				oldest, at = w, t
			}
		}
		delete(r.seen, oldest)
	}
	if now.After(r.seen[id]) {
		r.seen[id] = now
	}
}

// since returns the workers seen at or after cutoff, forgetting older ones.
func (r *workerRegistry) since(cutoff time.Time) map[string]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]time.Time, len(r.seen))
	for id, t := range r.seen {
		if t.Before(cutoff) {
			delete(r.seen, id)
			continue
		}
		out[id] = t
	}
	return out
}

// dueSignal wakes long-polling claims on this instance the moment it stores
// a pull job that is due. Jobs that become due elsewhere (another instance,
// the pending poller) are found by the claim's short store poll instead.
type dueSignal struct {
	mu sync.Mutex
	ch chan struct{}
}

// wait returns a channel closed at the next broadcast. Take it before
// reading the store, so a broadcast between the read and the wait is not
// missed.
func (d *dueSignal) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ch == nil {
		d.ch = make(chan struct{})
	}
	return d.ch
}

// broadcast wakes every claim waiting now.
func (d *dueSignal) broadcast() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ch != nil {
		close(d.ch)
		d.ch = nil
	}
}
