package stream

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/oklog/ulid/v2"
)

// Tailer defaults.
const (
	// PollIntervalDefault is how often the store is read for events other
	// instances wrote; local writes wake the tailer at once (Hub.Notify).
	PollIntervalDefault = 200 * time.Millisecond
	// SettleDefault is how long an event is held after the time in its id
	// before it is published (see Tailer).
	SettleDefault = 500 * time.Millisecond
	// LookbackDefault is how far behind the last published id every read
	// starts, to catch events committed later than the settle delay.
	LookbackDefault = 2 * time.Second
	// TailBatchDefault is the page size of one store read.
	TailBatchDefault = 500
)

// Reader is what the tailer and the replay read of the store.
type Reader interface {
	StatusEventListAfter(ctx context.Context, p *ListAfterParams) ([]Event, error)
}

// TailerConfig configures a Tailer.
type TailerConfig struct {
	Store Reader
	Hub   *Hub
	// PollInterval is the period of the store read. Default 200 ms.
	PollInterval time.Duration
	// Settle is the hold before publication. Default 500 ms.
	Settle time.Duration
	// Lookback is the trailing window re-read for late events. Default 2 s;
	// raised to Settle when smaller.
	Lookback time.Duration
	// BatchSize is the page size of a read. Default 500.
	BatchSize int
	Logger    *slog.Logger
	NowFunc   func() time.Time
}

// Tailer reads the status events every instance writes to the store and
// publishes them to the Hub, so a client of any instance sees every event.
//
// # Ordering and completeness
//
// Ids are ULIDs whose time comes from the clock of the instance that wrote
// the event, and an id is generated before its write commits. So an event
// with a lower id can become visible after one with a higher id: another
// goroutine, or another instance, was slower to commit. A tailer that
// simply read "after the last id" would skip it, and so would a client
// resuming with Last-Event-ID.
//
// The tailer therefore holds every event until Settle has passed since the
// time in its id, and publishes in ascending id order. Assumption: an event
// is committed within Settle of its id being generated, clock skew between
// instances included (default 500 ms: writes take milliseconds, NTP keeps
// skew to a few). Under it the published sequence is exactly the id order
// of the store, which makes Last-Event-ID resume and the replay/live seam
// exact (see Replay). An event that breaks the assumption but is committed
// within Lookback is still published, late and out of order, with a
// warning; one later than that is only in the store (history and replay).
// The trailing window is re-read twice per Lookback; other reads start at
// the last published id. While no client is connected the tailer reads
// nothing and moves its start to now.
//
// Per job, causal order holds whatever the instances' clocks: each
// transition is a version-checked write made after reading the previous
// version, and dispatch.Job.StatusEvent gives its event an id above every
// earlier event id of the job (the job's UpdatedAt is their Lamport clock);
// publishing in id order keeps dispatch.started before dispatch.completed
// even when two instances wrote them within one millisecond.
//
// # Latency
//
// A local write (Hub.Notify) is published Settle after its id was
// generated; a remote one within Settle + PollInterval (default 700 ms),
// plus the duration of a read.
type Tailer struct {
	cfg TailerConfig
	// start is the id below which events are history, never published.
	start  string
	cursor string
	seen   map[string]time.Time
	// lastLookback is when the trailing window was last re-read.
	lastLookback time.Time
}

// NewTailer returns a Tailer; its Run publishes events whose id time is
// at or after the moment of the call minus Settle.
func NewTailer(cfg TailerConfig) *Tailer {
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = PollIntervalDefault
	}
	if cfg.Settle <= 0 {
		cfg.Settle = SettleDefault
	}
	if cfg.Lookback <= 0 {
		cfg.Lookback = LookbackDefault
	}
	cfg.Lookback = max(cfg.Lookback, cfg.Settle)
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = TailBatchDefault
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Logger = cfg.Logger.With("component", "stream_tailer")
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	start := FloorID(cfg.NowFunc().Add(-cfg.Settle))
	cfg.Hub.setFrontier(start)
	return &Tailer{cfg: cfg, start: start, cursor: start, seen: make(map[string]time.Time)}
}

// Run publishes until ctx ends, reading at each poll, at each Hub.Notify
// and when a held event settles.
func (t *Tailer) Run(ctx context.Context) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-t.cfg.Hub.wake:
		}
		next, err := t.runOnce(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			t.cfg.Logger.WarnContext(ctx, "tail status events", "error", err)
			next = t.cfg.PollInterval
		}
		timer.Reset(next)
	}
}

// runOnce reads the store from the lookback window on, publishes what has
// settled and returns when to read again.
func (t *Tailer) runOnce(ctx context.Context) (time.Duration, error) {
	now := t.cfg.NowFunc()
	settled := now.Add(-t.cfg.Settle)
	next := t.cfg.PollInterval
	if f := max(FloorID(settled), t.cursor); t.cfg.Hub.advanceIfIdle(f) {
		// Nobody listens: skip to now instead of reading. What lies before
		// is history (replays read it from the store), never published
		// late, hence start moves too.
		if f > t.cursor {
			t.start, t.cursor = f, f
			clear(t.seen)
		}
		return next, nil
	}
	after := t.cursor
	if now.Sub(t.lastLookback) >= t.cfg.Lookback/2 {
		// The trailing window is re-read twice per Lookback, not at every
		// read: enough to catch late commits, cheap under load.
		after = max(FloorID(idTime(t.cursor).Add(-t.cfg.Lookback)), t.start)
		t.lastLookback = now
	}
	var out []*Event
	late := 0
	defer func() {
		if len(out) > 0 {
			t.cfg.Hub.Publish(out)
		}
		if late > 0 {
			t.cfg.Logger.WarnContext(ctx, "published late status events out of order", "events", late, "settle", t.cfg.Settle)
		}
	}()
	for {
		page, err := t.cfg.Store.StatusEventListAfter(ctx, &ListAfterParams{AfterID: after, Limit: t.cfg.BatchSize})
		if err != nil {
			return 0, fmt.Errorf("list status events after %s: %w", after, err)
		}
		for i := range page {
			e := &page[i]
			after = e.ID
			if _, ok := t.seen[e.ID]; ok {
				continue
			}
			at := idTime(e.ID)
			if at.After(settled) {
				// Held: everything from here on is too recent. Read again
				// when it settles, or at the next poll if sooner.
				t.prune()
				return min(next, at.Sub(settled)+time.Millisecond), nil
			}
			if e.ID < t.cursor {
				late++
			} else {
				t.cursor = e.ID
			}
			t.seen[e.ID] = at
			out = append(out, e)
		}
		if len(page) < t.cfg.BatchSize {
			t.prune()
			return next, nil
		}
	}
}

// prune forgets ids that fell out of the lookback window.
func (t *Tailer) prune() {
	horizon := idTime(t.cursor).Add(-t.cfg.Lookback)
	for id, at := range t.seen {
		if at.Before(horizon) {
			delete(t.seen, id)
		}
	}
}

// FloorID returns the smallest ULID of the millisecond of at: every id
// generated at or after at sorts above or equal to it.
func FloorID(at time.Time) string {
	var id ulid.ULID
	_ = id.SetTime(ulid.Timestamp(at)) // only fails past year 10889
	return id.String()
}

// idTime returns the time in a ULID, the zero time for another id.
func idTime(id string) time.Time {
	u, err := ulid.ParseStrict(id)
	if err != nil {
		return time.Time{}
	}
	return ulid.Time(u.Time())
}
