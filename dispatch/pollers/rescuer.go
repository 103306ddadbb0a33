package pollers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hooklane/hooklane/dispatch"
)

// Rescuer defaults.
const (
	// StaleIntervalDefault is how often QUEUED jobs are checked for loss.
	StaleIntervalDefault = 60 * time.Second
	// StaleQueuedAfterDefault is how long a job may stay QUEUED before it
	// counts as lost by the queue.
	StaleQueuedAfterDefault = 15 * time.Minute
	// LeaseIntervalDefault is how often expired claims are looked for.
	LeaseIntervalDefault = 10 * time.Second
)

// RescuerConfig configures a Rescuer.
type RescuerConfig struct {
	Jobs Jobs
	// StaleInterval is the period of the stale-queued check. Default 60 s.
	StaleInterval time.Duration
	// StaleQueuedAfter is the QUEUED age that counts as lost. Default 15 min.
	StaleQueuedAfter time.Duration
	// LeaseInterval is the period of the expired-lease check. Default 10 s.
	LeaseInterval time.Duration
	// BatchSize bounds one round of each check. Default 500.
	BatchSize int
	Logger    *slog.Logger
	NowFunc   func() time.Time
	// OnRescueFunc, when set, is called after each check that moved jobs,
	// with the check (RescueStaleQueued or RescueExpiredLease) and how many
	// jobs it moved. For metrics; it must not block.
	OnRescueFunc func(check string, moved int)
}

// Checks reported to RescuerConfig.OnRescueFunc.
const (
	// RescueStaleQueued is the check of jobs QUEUED for too long.
	RescueStaleQueued = "stale_queued"
	// RescueExpiredLease is the check of IN_PROGRESS jobs whose lease expired.
	RescueExpiredLease = "expired_lease"
)

// Rescuer recovers lost jobs through the lifecycle verbs: push jobs QUEUED
// for longer than StaleQueuedAfter (their message was lost) go back to
// PENDING, due at once, where the pending poller picks them up; IN_PROGRESS
// jobs whose lease expired (their worker died) have the lost attempt
// recorded as ABANDONED and retry under the job's policy.
type Rescuer struct {
	cfg RescuerConfig
}

// NewRescuer returns a Rescuer.
func NewRescuer(cfg RescuerConfig) *Rescuer {
	cfg.StaleInterval = orDefault(cfg.StaleInterval, StaleIntervalDefault)
	cfg.StaleQueuedAfter = orDefault(cfg.StaleQueuedAfter, StaleQueuedAfterDefault)
	cfg.LeaseInterval = orDefault(cfg.LeaseInterval, LeaseIntervalDefault)
	cfg.BatchSize = orBatchSize(cfg.BatchSize)
	cfg.Logger = orLogger(cfg.Logger).With("component", "rescuer")
	cfg.NowFunc = orNow(cfg.NowFunc)
	return &Rescuer{cfg: cfg}
}

// Run runs both checks until ctx ends.
func (r *Rescuer) Run(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() {
		errc <- loop(ctx, r.cfg.Logger, r.cfg.StaleInterval, func(ctx context.Context) (bool, error) {
			moved, listed, err := r.rescueStale(ctx, r.cfg.StaleQueuedAfter)
			return moved > 0 && listed == r.cfg.BatchSize, err
		})
	}()
	err := loop(ctx, r.cfg.Logger, r.cfg.LeaseInterval, func(ctx context.Context) (bool, error) {
		moved, listed, err := r.rescueExpired(ctx, r.cfg.NowFunc())
		return moved > 0 && listed == r.cfg.BatchSize, err
	})
	return errors.Join(err, <-errc)
}

// RescueStale moves push jobs QUEUED for longer than olderThan to PENDING
// and returns how many it moved. With olderThan 0 it moves every QUEUED
// push job: the embedded gateway does so at start, since its in-process
// queue died with the previous process.
func (r *Rescuer) RescueStale(ctx context.Context, olderThan time.Duration) (int, error) {
	n, _, err := r.rescueStale(ctx, olderThan)
	return n, err
}

// rescueStale is RescueStale that also returns how many jobs it listed: a
// full list that moved anything asks for another round at once, even when
// some of its jobs were moved by another instance meanwhile.
func (r *Rescuer) rescueStale(ctx context.Context, olderThan time.Duration) (moved, listed int, err error) {
	moved, listed, err = r.cfg.Jobs.RescueStale(ctx, dispatch.RescueParams{
		Before: r.cfg.NowFunc().Add(-olderThan), Limit: r.cfg.BatchSize,
	})
	r.report(RescueStaleQueued, moved)
	if err != nil {
		return moved, listed, fmt.Errorf("rescue stale queued jobs: %w", err)
	}
	return moved, listed, nil
}

// RescueExpired recovers IN_PROGRESS jobs whose lease expired by `at`
// (dispatch.Lifecycle.RescueExpired: the lost attempt counts as a failed
// one) and returns how many it moved.
func (r *Rescuer) RescueExpired(ctx context.Context, at time.Time) (int, error) {
	n, _, err := r.rescueExpired(ctx, at)
	return n, err
}

func (r *Rescuer) rescueExpired(ctx context.Context, at time.Time) (moved, listed int, err error) {
	moved, listed, err = r.cfg.Jobs.RescueExpired(ctx, dispatch.RescueParams{Before: at, Limit: r.cfg.BatchSize})
	r.report(RescueExpiredLease, moved)
	if err != nil {
		return moved, listed, fmt.Errorf("rescue expired claims: %w", err)
	}
	return moved, listed, nil
}

func (r *Rescuer) report(check string, moved int) {
	if r.cfg.OnRescueFunc != nil && moved > 0 {
		r.cfg.OnRescueFunc(check, moved)
	}
}
