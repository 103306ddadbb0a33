package pollers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hooklane/hooklane/event"
)

// Fan-out recovery defaults.
const (
	// FanOutIntervalDefault is the fan-out recovery period.
	FanOutIntervalDefault = 30 * time.Second
	// FanOutGraceDefault is how old an event that is not fanned out must be
	// before recovery takes it over from the request still writing it.
	FanOutGraceDefault = 30 * time.Second
)

// FanOutStore is what fan-out recovery needs of the store.
type FanOutStore interface {
	EventListNotFannedOut(ctx context.Context, p *event.ListNotFannedOutParams) ([]*event.Event, error)
}

// FanOuter creates the jobs of a stored event.
type FanOuter interface {
	FanOut(ctx context.Context, ev *event.Event) (int, error)
}

// FanOutConfig configures FanOut.
type FanOutConfig struct {
	Store    FanOutStore
	FanOuter FanOuter
	// Interval is the period. Default 30 s.
	Interval time.Duration
	// Grace is how old an event not fanned out must be before recovery
	// fans it out. Default 30 s.
	Grace time.Duration
	// BatchSize bounds one round. Default 500.
	BatchSize int
	Logger    *slog.Logger
	NowFunc   func() time.Time
	// OnFanOutFunc, when set, is called after each recovered fan-out with
	// the number of jobs it stored. For metrics; it must not block.
	OnFanOutFunc func(jobs int)
}

// FanOut finishes the fan-out of events a crash left stored without their
// jobs. Job ids are derived from (event, subscription), so finishing a
// fan-out twice is harmless.
type FanOut struct {
	cfg FanOutConfig
}

// NewFanOut returns the fan-out recovery poller.
func NewFanOut(cfg FanOutConfig) *FanOut {
	cfg.Interval = orDefault(cfg.Interval, FanOutIntervalDefault)
	cfg.Grace = orDefault(cfg.Grace, FanOutGraceDefault)
	cfg.BatchSize = orBatchSize(cfg.BatchSize)
	cfg.Logger = orLogger(cfg.Logger).With("component", "fanout_poller")
	cfg.NowFunc = orNow(cfg.NowFunc)
	return &FanOut{cfg: cfg}
}

// Run polls until ctx ends.
func (f *FanOut) Run(ctx context.Context) error {
	return loop(ctx, f.cfg.Logger, f.cfg.Interval, func(ctx context.Context) (bool, error) {
		_, more, err := f.runOnce(ctx, f.cfg.NowFunc().Add(-f.cfg.Grace))
		return more, err
	})
}

// RunOnce fans out the events received before `before` that are not fanned
// out, and returns how many events it fanned out. An event that fails is
// logged and left for the next round; the others go on.
func (f *FanOut) RunOnce(ctx context.Context, before time.Time) (int, error) {
	n, _, err := f.runOnce(ctx, before)
	return n, err
}

// runOnce also reports whether another round should follow at once: the
// batch was full and every event of it was fanned out.
func (f *FanOut) runOnce(ctx context.Context, before time.Time) (int, bool, error) {
	events, err := f.cfg.Store.EventListNotFannedOut(ctx, &event.ListNotFannedOutParams{ReceivedBefore: before, Limit: f.cfg.BatchSize})
	if err != nil {
		return 0, false, fmt.Errorf("list events not fanned out: %w", err)
	}
	done := 0
	var errs []error
	for _, ev := range events {
		jobs, err := f.cfg.FanOuter.FanOut(ctx, ev)
		if err != nil {
			if ctx.Err() != nil {
				return done, false, fmt.Errorf("fan out event %s: %w", ev.ID, err)
			}
			errs = append(errs, fmt.Errorf("fan out event %s: %w", ev.ID, err))
			continue
		}
		done++
		f.cfg.Logger.InfoContext(ctx, "finished interrupted fan-out", "event_id", ev.ID, "jobs", jobs)
		if f.cfg.OnFanOutFunc != nil {
			f.cfg.OnFanOutFunc(jobs)
		}
	}
	return done, len(errs) == 0 && len(events) == f.cfg.BatchSize, errors.Join(errs...)
}
