package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"golang.org/x/time/rate"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
)

// Worker defaults.
const (
	// RateDefault is how many jobs per second a Worker creates at most
	// (HOOKLANE_REPLAY_RATE): enough to backfill a day of a busy
	// subscription in minutes, well below what the store and the queue
	// sustain, so live traffic keeps its share.
	RateDefault = 2000
	// BacklogMaxDefault is the subscription backlog (unfinished jobs) above
	// which a Worker waits (HOOKLANE_REPLAY_BACKLOG): a receiver that cannot
	// keep up is not buried under a replay, and live jobs, which share the
	// queue, never wait behind more than this many replayed ones (at 10,000
	// the benchmark's live p99 reached 2 s on a loaded 2-core machine; see
	// BENCHMARKS.md).
	BacklogMaxDefault = 1000
	// LeaseDefault is how long a Worker's hold on a replay lasts without a
	// checkpoint; a killed Worker's replay is taken over after that long.
	LeaseDefault = 30 * time.Second
	// PageSizeDefault is how many events a Worker reads per page (and per
	// checkpoint).
	PageSizeDefault = 500
	// PollIntervalDefault is how often an idle Worker looks for replays to
	// take (a start on this instance wakes it at once).
	PollIntervalDefault = 2 * time.Second
	// BacklogWaitDefault is how long a Worker waits before it counts the
	// backlog again (one count of at most BacklogMax+1 jobs).
	BacklogWaitDefault = 250 * time.Millisecond
)

// Jobs is what a Worker needs of the job lifecycle (*dispatch.Lifecycle).
type Jobs interface {
	// Insert stores new jobs with their creation status events,
	// idempotently.
	Insert(ctx context.Context, jobs []*dispatch.Job, extra ...stream.Event) error
	// Send puts stored QUEUED push jobs on the queue, in the order given.
	Send(ctx context.Context, jobs []*dispatch.Job, events ...*event.Event) (int, error)
}

// WorkerConfig configures a Worker.
type WorkerConfig struct {
	// Store holds replays, events and jobs. Required.
	Store Store
	// Subscriptions reads the replayed subscription. Required.
	Subscriptions Subscriptions
	// Jobs creates the jobs. Required.
	Jobs Jobs
	// IDs issues status event ids. Required.
	IDs *idgen.Generator
	// Owner names this worker in leases (host:pid). Required.
	Owner string
	// Rate is the most jobs created per second (a token bucket whose burst
	// is a second's worth, at most a page); ≤ 0 means RateDefault. Use
	// math.Inf(1) for no bound.
	Rate float64
	// BacklogMax is the unfinished-job count of the subscription above which
	// the Worker waits. Default BacklogMaxDefault; < 0: never wait.
	BacklogMax int
	// BacklogWait is the wait before the backlog is counted again. Default
	// BacklogWaitDefault.
	BacklogWait time.Duration
	// Lease is how long a hold lasts between checkpoints. Default
	// LeaseDefault.
	Lease time.Duration
	// PageSize is the events read per page. Default PageSizeDefault.
	PageSize int
	// PollInterval is how often Run looks for replays. Default
	// PollIntervalDefault.
	PollInterval time.Duration
	// OnPageFunc, when set, is called after each checkpoint with the page's
	// scanned events and created jobs (for metrics). It must not block.
	OnPageFunc func(scanned, created int)
	// AfterPageFunc, when set (by tests), is called after each checkpoint
	// with the replay as written.
	AfterPageFunc func(r *Replay)
	// OnBacklogFunc, when set (by tests), is called each time the Worker
	// waits for the subscription's backlog, with the count it saw.
	OnBacklogFunc func(r *Replay, backlog int)
	// NowFunc is the clock. Default time.Now.
	NowFunc func() time.Time
	Logger  *slog.Logger
}

// Worker runs replays: it takes RUNNING replays whose lease is free or
// expired and works each to its end (see the package doc). Several Workers
// (one per instance) may run against one store.
type Worker struct {
	cfg     WorkerConfig
	limiter *rate.Limiter
	burst   int
	wake    chan struct{}
}

// NewWorker returns a Worker.
func NewWorker(cfg WorkerConfig) *Worker {
	if cfg.Rate <= 0 {
		cfg.Rate = RateDefault
	}
	if cfg.BacklogMax == 0 {
		cfg.BacklogMax = BacklogMaxDefault
	}
	if cfg.BacklogWait <= 0 {
		cfg.BacklogWait = BacklogWaitDefault
	}
	if cfg.Lease <= 0 {
		cfg.Lease = LeaseDefault
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = PageSizeDefault
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = PollIntervalDefault
	}
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Logger = cfg.Logger.With("component", "replay")
	// The burst is a second's worth of jobs, at most a page: a page's new
	// jobs are created in chunks of the burst, each when the limiter allows.
	burst := cfg.PageSize
	if !math.IsInf(cfg.Rate, 1) {
		burst = max(1, min(cfg.PageSize, int(cfg.Rate)))
	}
	return &Worker{
		cfg:     cfg,
		limiter: rate.NewLimiter(rate.Limit(cfg.Rate), burst),
		burst:   burst,
		wake:    make(chan struct{}, 1),
	}
}

// Wake makes Run look for replays now. It never blocks.
func (w *Worker) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Run works replays until ctx ends, then returns nil.
func (w *Worker) Run(ctx context.Context) error {
	t := time.NewTicker(w.cfg.PollInterval)
	defer t.Stop()
	for {
		if err := w.RunOnce(ctx); err != nil && ctx.Err() == nil {
			w.cfg.Logger.WarnContext(ctx, "replay round failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-w.wake:
		}
	}
}

// RunOnce takes every replay it can and works them all to their end (or
// until it loses a lease, or ctx ends), sharing itself fairly: it works one
// page of a replay at a time and takes turns round-robin between the
// clients of the replays it holds (between a client's replays in turn), so
// a client's long replay does not delay another client's start — the
// second, short one ends after a few turns of the first. The replays a
// round may take are looked for before every turn.
func (w *Worker) RunOnce(ctx context.Context) error {
	turns := newTurns()
	waits := 0 // turns in a row whose replay waited for its backlog
	for ctx.Err() == nil {
		if err := w.takeNew(ctx, turns); err != nil {
			return err
		}
		r := turns.next()
		if r == nil {
			return nil
		}
		done, waited, err := w.slice(ctx, r, turns)
		if err != nil {
			if ctx.Err() != nil {
				return nil //nolint:nilerr // stopping: the lease runs out and another worker resumes
			}
			w.cfg.Logger.WarnContext(ctx, "replay interrupted", "replay_id", r.ID, "error", err)
			turns.forget(r)
			continue
		}
		if done {
			turns.forget(r)
			continue
		}
		turns.push(r)
		if waited {
			waits++
		} else {
			waits = 0
		}
		if waited && waits >= turns.len() {
			// Every replay held waits for its subscription's backlog.
			if err := w.pause(ctx, r); err != nil {
				return nil //nolint:nilerr // stopping: the lease runs out and another worker resumes
			}
		}
	}
	return nil
}

// takeNew claims the replays free to take that turns does not hold yet.
func (w *Worker) takeNew(ctx context.Context, turns *turns) error {
	rs, err := w.cfg.Store.ReplayListClaimable(ctx, &ListClaimableParams{Now: w.now(), Limit: 10})
	if err != nil {
		return fmt.Errorf("list claimable replays: %w", err)
	}
	for _, r := range rs {
		if turns.holds(r.ID) {
			continue
		}
		ok, err := w.claim(ctx, r)
		if err != nil {
			return err
		}
		if ok {
			turns.push(r)
		}
	}
	return nil
}

// pause waits BacklogWait (or until ctx ends).
func (w *Worker) pause(ctx context.Context, r *Replay) error {
	t := time.NewTimer(w.cfg.BacklogWait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("wait for backlog of replay %s: %w", r.ID, ctx.Err())
	case <-t.C:
		return nil
	}
}

// turns is the round-robin of the replays one RunOnce holds: clients take
// turns, and a client's replays take turns within its turns.
type turns struct {
	clients  []string             // the rotation of clients with replays ("" is the platform)
	byClient map[string][]*Replay // each client's replays, the next first
	held     map[string]bool      // the ids of the replays held
	waiting  map[string]bool      // the ids of the replays whose backlog wait was logged
}

func newTurns() *turns {
	return &turns{byClient: map[string][]*Replay{}, held: map[string]bool{}, waiting: map[string]bool{}}
}

func clientKey(r *Replay) string {
	if r.ClientID == nil {
		return ""
	}
	return *r.ClientID
}

// push puts r at the end of its client's replays (and the client at the end
// of the rotation when it had none).
func (t *turns) push(r *Replay) {
	c := clientKey(r)
	if len(t.byClient[c]) == 0 && !slices.Contains(t.clients, c) {
		t.clients = append(t.clients, c)
	}
	t.byClient[c] = append(t.byClient[c], r)
	t.held[r.ID] = true
}

// next takes the replay whose turn it is: the next replay of the client
// first in the rotation, which moves to its end. nil when none is held.
func (t *turns) next() *Replay {
	for len(t.clients) > 0 {
		c := t.clients[0]
		t.clients = t.clients[1:]
		rs := t.byClient[c]
		if len(rs) == 0 {
			delete(t.byClient, c)
			continue
		}
		r := rs[0]
		t.byClient[c] = rs[1:]
		t.clients = append(t.clients, c)
		return r
	}
	return nil
}

// forget drops r, which has ended or was lost.
func (t *turns) forget(r *Replay) {
	delete(t.held, r.ID)
	delete(t.waiting, r.ID)
}

func (t *turns) holds(id string) bool { return t.held[id] }

func (t *turns) len() int { return len(t.held) }

func (w *Worker) now() time.Time { return w.cfg.NowFunc().UTC().Truncate(time.Millisecond) }

// claim takes r's lease with a version-checked write; false when another
// worker took it first.
func (w *Worker) claim(ctx context.Context, r *Replay) (bool, error) {
	now := w.now()
	if r.Status != StatusRunning || r.Leased(w.cfg.Owner, now) {
		return false, nil
	}
	if r.Owner != "" && r.Owner != w.cfg.Owner {
		w.cfg.Logger.InfoContext(ctx, "taking over replay", "replay_id", r.ID, "previous_owner", r.Owner,
			"after_id", r.AfterID)
	}
	r.Owner = w.cfg.Owner
	r.LeaseExpiresAt = new(now.Add(w.cfg.Lease))
	r.UpdatedAt = now
	err := w.cfg.Store.ReplayUpdate(ctx, r)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound):
		return false, nil
	default:
		return false, fmt.Errorf("claim replay %s: %w", r.ID, err)
	}
}

// errLeaseLost stops work on a replay another worker took over.
var errLeaseLost = errors.New("replay lease lost")

// checkpoint writes r (counters, position, status) and renews the lease.
func (w *Worker) checkpoint(ctx context.Context, r *Replay) error {
	now := w.now()
	r.UpdatedAt = now
	r.LeaseExpiresAt = new(now.Add(w.cfg.Lease))
	err := w.cfg.Store.ReplayUpdate(ctx, r)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("checkpoint replay %s: %w", r.ID, errLeaseLost)
	default:
		return fmt.Errorf("checkpoint replay %s: %w", r.ID, err)
	}
}

// slice works one page of r, its turn: done when r has ended, waited when
// its subscription's backlog was above BacklogMax (the lease is renewed and
// nothing read).
func (w *Worker) slice(ctx context.Context, r *Replay, turns *turns) (done, waited bool, err error) {
	sub, err := w.cfg.Subscriptions.Get(ctx, r.SubscriptionID)
	if errors.Is(err, store.ErrNotFound) {
		return true, false, w.finish(ctx, r, StatusFailed, "the subscription was deleted")
	}
	if err != nil {
		return false, false, fmt.Errorf("get subscription of replay %s: %w", r.ID, err)
	}
	over, err := w.backlogOver(ctx, r, turns)
	if err != nil {
		return false, false, err
	}
	if over {
		return false, true, w.checkpoint(ctx, r)
	}
	events, err := w.cfg.Store.EventListReceived(ctx, &event.ListReceivedParams{
		Since: r.Since, AfterReceivedAt: r.AfterReceivedAt, AfterID: r.AfterID, Until: r.Until, Limit: w.cfg.PageSize,
	})
	if err != nil {
		return false, false, fmt.Errorf("read events of replay %s: %w", r.ID, err)
	}
	if len(events) == 0 {
		return true, false, w.finish(ctx, r, StatusCompleted, "")
	}
	created, err := w.page(ctx, r, sub, events)
	if err != nil {
		return false, false, err
	}
	last := events[len(events)-1]
	r.AfterReceivedAt, r.AfterID = last.ReceivedAt, last.ID
	r.Scanned += int64(len(events))
	r.Created += int64(created)
	if err := w.checkpoint(ctx, r); err != nil {
		return false, false, err
	}
	if w.cfg.OnPageFunc != nil {
		w.cfg.OnPageFunc(len(events), created)
	}
	if w.cfg.AfterPageFunc != nil {
		w.cfg.AfterPageFunc(r)
	}
	return false, false, nil
}

// page matches one page of events and creates the jobs missing; it
// returns how many it created. Matched is counted on r.
func (w *Worker) page(ctx context.Context, r *Replay, sub *subscription.Subscription, events []*event.Event) (int, error) {
	acc := subscription.NewAcceptor(sub)
	settings := sub.JobSettings()
	now := w.now()
	var jobs []*dispatch.Job
	for _, ev := range events {
		if !r.wants(ev.Event.Type) || !acc.Accepts(&ev.Event, ev.SchemaVersion) {
			continue
		}
		r.Matched++
		j := dispatch.NewEventJob(ev, settings, now)
		if r.Redeliver {
			// A new job (new webhook-id) per event and replay, the same
			// however often this replay is resumed.
			j.ID = idgen.Derived(ev.ReceivedAt, ev.ID, sub.ID, r.ID)
		}
		jobs = append(jobs, j)
	}
	if len(jobs) == 0 {
		return 0, nil
	}
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	existing, err := w.cfg.Store.JobGetMany(ctx, ids)
	if err != nil {
		return 0, fmt.Errorf("read jobs of replay %s: %w", r.ID, err)
	}
	have := make(map[string]bool, len(existing))
	for _, j := range existing {
		have[j.ID] = true
	}
	fresh := jobs[:0]
	for _, j := range jobs {
		if !have[j.ID] {
			fresh = append(fresh, j)
		}
	}
	if len(fresh) == 0 {
		return 0, nil
	}
	created := 0
	for chunk := range slices.Chunk(fresh, w.burst) {
		if err := w.limiter.WaitN(ctx, len(chunk)); err != nil {
			return created, fmt.Errorf("wait for replay rate: %w", err)
		}
		if err := w.cfg.Jobs.Insert(ctx, chunk); err != nil {
			return created, fmt.Errorf("create jobs of replay %s: %w", r.ID, err)
		}
		created += len(chunk)
		// Sent in event order: each group's jobs reach the queue in order.
		if n, err := w.cfg.Jobs.Send(ctx, chunk, events...); n > 0 {
			w.cfg.Logger.WarnContext(ctx, "replay jobs left pending after queue send failure", "replay_id", r.ID,
				"jobs", n, "error", err)
		}
	}
	return created, nil
}

// wants reports whether the replay's eventTypes narrowing lets code through.
func (r *Replay) wants(code string) bool {
	if len(r.EventTypes) == 0 {
		return true
	}
	for _, p := range r.EventTypes {
		if event.MatchTypePattern(p, code) {
			return true
		}
	}
	return false
}

// backlogOver reports whether the subscription's unfinished jobs are
// above BacklogMax (then r waits: its turn passes).
func (w *Worker) backlogOver(ctx context.Context, r *Replay, turns *turns) (bool, error) {
	if w.cfg.BacklogMax < 0 {
		return false, nil
	}
	n, err := w.cfg.Store.JobCountUnfinished(ctx, &JobCountUnfinishedParams{
		SubscriptionID: r.SubscriptionID, Limit: w.cfg.BacklogMax + 1,
	})
	if err != nil {
		return false, fmt.Errorf("count backlog of replay %s: %w", r.ID, err)
	}
	if n <= w.cfg.BacklogMax {
		return false, nil
	}
	if w.cfg.OnBacklogFunc != nil {
		w.cfg.OnBacklogFunc(r, n)
	}
	if !turns.waiting[r.ID] {
		w.cfg.Logger.InfoContext(ctx, "replay paused: subscription backlog above bound", "replay_id", r.ID,
			"backlog_max", w.cfg.BacklogMax)
		turns.waiting[r.ID] = true
	}
	return true, nil
}

// finish ends r with status (and error) and emits replay.completed.
func (w *Worker) finish(ctx context.Context, r *Replay, status Status, msg string) error {
	now := w.now()
	r.Status, r.Error = status, msg
	r.CompletedAt = &now
	r.Owner, r.LeaseExpiresAt = "", nil
	if err := w.checkpoint(ctx, r); err != nil {
		return err
	}
	r.LeaseExpiresAt = nil
	if err := w.cfg.Store.StatusEventInsertMany(ctx, []stream.Event{statusEvent(w.cfg.IDs.New(), stream.TypeReplayCompleted, r, now)}); err != nil {
		w.cfg.Logger.WarnContext(ctx, "store replay.completed", "replay_id", r.ID, "error", err)
	}
	w.cfg.Logger.InfoContext(ctx, "replay finished", "replay_id", r.ID, "status", r.Status,
		"scanned", r.Scanned, "matched", r.Matched, "created", r.Created)
	return nil
}
