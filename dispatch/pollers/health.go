package pollers

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hooklane/hooklane/dispatch/health"
)

// HealthLastRetentionDefault is how long a subscription's last success and
// failure are kept after the later of the two: past it, a subscription
// with no attempt (or a deleted one) loses them.
const HealthLastRetentionDefault = 30 * 24 * time.Hour

// HealthDeleter is what the health retention poller needs of the store.
type HealthDeleter interface {
	HealthDeleteBefore(ctx context.Context, p *health.DeleteBeforeParams) (int, error)
}

// HealthRetentionConfig configures the health retention poller.
type HealthRetentionConfig struct {
	Store HealthDeleter
	// Interval is the period. Default 1 min.
	Interval time.Duration
	// BatchSize bounds one delete. Default 500.
	BatchSize int
	Logger    *slog.Logger
	NowFunc   func() time.Time
}

// HealthRetention deletes the endpoint health aggregates no window needs
// any more (older than health.Retention), and the last success and failure
// of subscriptions silent for HealthLastRetentionDefault, in batches.
// Several instances may run it at once; each delete is idempotent.
type HealthRetention struct {
	cfg HealthRetentionConfig
}

// NewHealthRetention returns the health retention poller.
func NewHealthRetention(cfg HealthRetentionConfig) *HealthRetention {
	cfg.Interval = orDefault(cfg.Interval, RetentionIntervalDefault)
	cfg.BatchSize = orBatchSize(cfg.BatchSize)
	cfg.Logger = orLogger(cfg.Logger).With("component", "health_retention_poller")
	cfg.NowFunc = orNow(cfg.NowFunc)
	return &HealthRetention{cfg: cfg}
}

// Run polls until ctx ends.
func (r *HealthRetention) Run(ctx context.Context) error {
	return loop(ctx, r.cfg.Logger, r.cfg.Interval, r.runOnce)
}

// runOnce deletes one batch and reports whether there may be more.
func (r *HealthRetention) runOnce(ctx context.Context) (bool, error) {
	now := r.cfg.NowFunc()
	n, err := r.cfg.Store.HealthDeleteBefore(ctx, &health.DeleteBeforeParams{
		BucketsBefore: now.Add(-health.Retention), LastBefore: now.Add(-HealthLastRetentionDefault), Limit: r.cfg.BatchSize,
	})
	if err != nil {
		return false, fmt.Errorf("delete old health aggregates: %w", err)
	}
	if n > 0 {
		r.cfg.Logger.DebugContext(ctx, "deleted old health aggregates", "records", n)
	}
	return n >= r.cfg.BatchSize, nil
}
