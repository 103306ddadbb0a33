package pollers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/stream"
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
	Store JobStore
	// StaleInterval is the period of the stale-queued check. Default 60 s.
	StaleInterval time.Duration
	// StaleQueuedAfter is the QUEUED age that counts as lost. Default 15 min.
	StaleQueuedAfter time.Duration
	// LeaseInterval is the period of the expired-lease check. Default 10 s.
	LeaseInterval time.Duration
	// BatchSize bounds one round of each check. Default 500.
	BatchSize int
	NewID     func() string
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

// Rescuer returns lost jobs to PENDING, due at once, where the pending
// poller picks them up: push jobs QUEUED for longer than StaleQueuedAfter
// (their message was lost), and IN_PROGRESS jobs whose lease expired (their
// worker died), the lost attempt recorded as ABANDONED.
type Rescuer struct {
	cfg RescuerConfig
}

// NewRescuer returns a Rescuer.
func NewRescuer(cfg RescuerConfig) *Rescuer {
	cfg.StaleInterval = orDefault(cfg.StaleInterval, StaleIntervalDefault)
	cfg.StaleQueuedAfter = orDefault(cfg.StaleQueuedAfter, StaleQueuedAfterDefault)
	cfg.LeaseInterval = orDefault(cfg.LeaseInterval, LeaseIntervalDefault)
	cfg.BatchSize = orDefaultInt(cfg.BatchSize, BatchSizeDefault)
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
	now := r.cfg.NowFunc()
	jobs, err := r.cfg.Store.JobListDue(ctx, &dispatch.JobListDueParams{
		Status: dispatch.StatusQueued, Now: now.Add(-olderThan), Limit: r.cfg.BatchSize, Delivery: dispatch.DeliveryPush,
	})
	if err != nil {
		return 0, 0, fmt.Errorf("list stale queued jobs: %w", err)
	}
	moved, err = r.reset(ctx, jobs, now, "queued too long: message presumed lost", false)
	r.report(RescueStaleQueued, moved)
	return moved, len(jobs), err
}

// RescueExpired moves IN_PROGRESS jobs whose lease expired by `at` to
// PENDING (or ERROR when they have no attempt left) and returns how many it
// moved.
func (r *Rescuer) RescueExpired(ctx context.Context, at time.Time) (int, error) {
	n, _, err := r.rescueExpired(ctx, at)
	return n, err
}

func (r *Rescuer) rescueExpired(ctx context.Context, at time.Time) (moved, listed int, err error) {
	jobs, err := r.cfg.Store.JobListDue(ctx, &dispatch.JobListDueParams{
		Status: dispatch.StatusInProgress, Now: at, Limit: r.cfg.BatchSize,
	})
	if err != nil {
		return 0, 0, fmt.Errorf("list expired claims: %w", err)
	}
	moved, err = r.reset(ctx, jobs, r.cfg.NowFunc(), "lease expired: worker presumed dead", true)
	r.report(RescueExpiredLease, moved)
	return moved, len(jobs), err
}

func (r *Rescuer) report(check string, moved int) {
	if r.cfg.OnRescueFunc != nil && moved > 0 {
		r.cfg.OnRescueFunc(check, moved)
	}
}

func (r *Rescuer) reset(ctx context.Context, jobs []*dispatch.Job, now time.Time, reason string, abandoned bool) (int, error) {
	moved := 0
	for _, j := range jobs {
		var events []stream.Event
		if abandoned {
			worker := j.Worker
			j.Attempts = append(j.Attempts, dispatch.Attempt{
				Attempt: j.AttemptCount, Action: dispatch.ActionAbandoned, StartedAt: now, Error: reason, Worker: worker,
			})
			j.LastError = &reason
			if j.AttemptCount >= j.MaxAttempts {
				if err := j.Transition(dispatch.StatusError, now); err != nil {
					continue
				}
				ev := j.StatusEvent(r.cfg.NewID(), stream.TypeDispatchDiscarded, now)
				ev.Data.Error = reason
				events = append(events, ev)
			}
		}
		if len(events) == 0 {
			if err := j.Transition(dispatch.StatusPending, now); err != nil {
				continue
			}
			due := now
			j.NextAttemptAt = &due
			typ := stream.TypeDispatchPending
			if abandoned {
				typ = stream.TypeDispatchFailed
			}
			ev := j.StatusEvent(r.cfg.NewID(), typ, now)
			ev.Data.Error = reason
			events = append(events, ev)
		}
		if err := r.cfg.Store.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: j, Events: events}); err != nil {
			if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
				continue
			}
			return moved, fmt.Errorf("rescue job %s: %w", j.ID, err)
		}
		moved++
	}
	if moved > 0 {
		r.cfg.Logger.InfoContext(ctx, "rescued jobs", "jobs", moved, "reason", reason)
	}
	return moved, nil
}
