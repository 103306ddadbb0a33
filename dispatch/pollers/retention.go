package pollers

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Retention defaults.
const (
	// RetentionDefault is how long status events are kept (API.md §7).
	RetentionDefault = time.Hour
	// RetentionIntervalDefault is the period of the retention poller.
	RetentionIntervalDefault = time.Minute
)

// StatusEventDeleter is what the retention poller needs of the store.
type StatusEventDeleter interface {
	StatusEventDeleteBefore(ctx context.Context, before time.Time, limit int) (int, error)
}

// RetentionConfig configures the retention poller.
type RetentionConfig struct {
	Store StatusEventDeleter
	// Retention is how long status events are kept. Default 1 h.
	Retention time.Duration
	// Interval is the period. Default 1 min.
	Interval time.Duration
	// BatchSize bounds one delete. Default 500.
	BatchSize int
	Logger    *slog.Logger
	NowFunc   func() time.Time
}

// Retention deletes status events older than the retention window, in
// batches of BatchSize: a full batch is followed by another at once, so a
// backlog drains without one long delete holding the store. Several
// instances may run it at once; each delete is idempotent.
type Retention struct {
	cfg RetentionConfig
}

// NewRetention returns the retention poller.
func NewRetention(cfg RetentionConfig) *Retention {
	cfg.Retention = orDefault(cfg.Retention, RetentionDefault)
	cfg.Interval = orDefault(cfg.Interval, RetentionIntervalDefault)
	cfg.BatchSize = orBatchSize(cfg.BatchSize)
	cfg.Logger = orLogger(cfg.Logger).With("component", "retention_poller")
	cfg.NowFunc = orNow(cfg.NowFunc)
	return &Retention{cfg: cfg}
}

// Run polls until ctx ends.
func (r *Retention) Run(ctx context.Context) error {
	return loop(ctx, r.cfg.Logger, r.cfg.Interval, r.runOnce)
}

// runOnce deletes one batch and reports whether it was full.
func (r *Retention) runOnce(ctx context.Context) (bool, error) {
	before := r.cfg.NowFunc().Add(-r.cfg.Retention)
	n, err := r.cfg.Store.StatusEventDeleteBefore(ctx, before, r.cfg.BatchSize)
	if err != nil {
		return false, fmt.Errorf("delete status events before %s: %w", before.Format(time.RFC3339), err)
	}
	if n > 0 {
		r.cfg.Logger.DebugContext(ctx, "deleted expired status events", "events", n)
	}
	return n == r.cfg.BatchSize, nil
}
