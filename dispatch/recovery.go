package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hooklane/hooklane/stream"
)

// queueWriters bounds the job moves one QueueDue round runs at once.
const queueWriters = 16

// QueueDueParams are the arguments of QueueDue.
type QueueDueParams struct {
	// Limit bounds the jobs of one round.
	Limit int
}

// QueueDue moves PENDING jobs that are due to QUEUED and sends the push
// ones, in group order: one round of the pending poller. It first releases
// again the BLOCK_ON_ERROR groups whose release failed (release_retry.go). Every move is a
// version-checked write, so of several instances exactly one queues a given
// job. It returns how many jobs it queued and how many it listed (a full
// list asks for another round at once).
func (lc *Lifecycle) QueueDue(ctx context.Context, p QueueDueParams) (queued, listed int, err error) {
	// Groups whose release failed first: their parked jobs are not due.
	if n := lc.retryReleases(ctx); n > 0 {
		lc.cfg.Logger.InfoContext(ctx, "released blocked groups after a failed release", "groups", n)
	}
	now := lc.now()
	jobs, err := lc.cfg.Store.JobListDue(ctx, &JobListDueParams{Status: StatusPending, Now: now, Limit: p.Limit})
	if err != nil {
		return 0, 0, fmt.Errorf("list due pending jobs: %w", err)
	}
	// The moves are independent writes: run them side by side (the store
	// batches concurrent writes), then send the moved jobs in the listed
	// order, which keeps each group's order.
	moved := make([]bool, len(jobs))
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, queueWriters)
	var wg sync.WaitGroup
	for i, j := range jobs {
		if err := j.Transition(StatusQueued, now); err != nil {
			continue
		}
		ev := lc.event(j, stream.TypeDispatchQueued, now)
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			moved[i], errs[i] = lc.tryWrite(ctx, j, []stream.Event{ev})
		})
	}
	wg.Wait()
	var toSend []*Job
	for i, j := range jobs {
		if moved[i] {
			queued++
			toSend = append(toSend, j)
		}
	}
	if failed, serr := lc.Send(ctx, toSend); failed > 0 {
		lc.cfg.Logger.WarnContext(ctx, "jobs back to pending after queue send failure", "jobs", failed, "error", serr)
	}
	return queued, len(jobs), errors.Join(errs...)
}

// RescueParams are the arguments of RescueStale and RescueExpired.
type RescueParams struct {
	// Before is the cutoff: QUEUED jobs unchanged since before it
	// (RescueStale), claims whose lease expired by it (RescueExpired).
	Before time.Time
	// Limit bounds the jobs of one round.
	Limit int
}

// RescueStale returns push jobs QUEUED since before p.Before — their
// message was lost — to PENDING, due at once, for the pending poller; a job
// whose max age passed meanwhile goes to ERROR instead. It returns how many
// jobs it moved and how many it listed.
func (lc *Lifecycle) RescueStale(ctx context.Context, p RescueParams) (moved, listed int, err error) {
	jobs, err := lc.cfg.Store.JobListDue(ctx, &JobListDueParams{
		Status: StatusQueued, Now: p.Before, Limit: p.Limit, Delivery: DeliveryPush,
	})
	if err != nil {
		return 0, 0, fmt.Errorf("list stale queued jobs: %w", err)
	}
	const reason = "queued too long: message presumed lost"
	for _, j := range jobs {
		now := lc.now()
		var events []stream.Event
		if j.Expired(now) {
			msg := "max age passed before delivery"
			j.LastError = &msg
			if j.Transition(StatusError, now) != nil {
				continue
			}
			ev := lc.event(j, stream.TypeDispatchDiscarded, now)
			ev.Data.Error = msg
			events = append(events, ev)
		} else {
			if j.Transition(StatusPending, now) != nil {
				continue
			}
			j.NextAttemptAt = &now
			ev := lc.event(j, stream.TypeDispatchPending, now)
			ev.Data.Error = reason
			events = append(events, ev)
		}
		won, err := lc.tryWrite(ctx, j, events)
		if err != nil {
			return moved, len(jobs), fmt.Errorf("rescue job %s: %w", j.ID, err)
		}
		if won {
			moved++
		}
	}
	if moved > 0 {
		lc.cfg.Logger.InfoContext(ctx, "rescued jobs", "jobs", moved, "reason", reason)
	}
	return moved, len(jobs), nil
}

// errLeaseExpired is the failure recorded for a claim whose worker died.
var errLeaseExpired = errors.New("lease expired: worker presumed dead")

// RescueExpired recovers IN_PROGRESS jobs whose lease expired by p.Before:
// their worker is presumed dead. The lost attempt is recorded as ABANDONED
// and counts as a failed, retryable attempt: the job retries after the
// policy's backoff while attempts and max age allow (the same decision as
// any failure), else it ends in ERROR. It returns how many jobs it moved and
// how many it listed.
func (lc *Lifecycle) RescueExpired(ctx context.Context, p RescueParams) (moved, listed int, err error) {
	jobs, err := lc.cfg.Store.JobListDue(ctx, &JobListDueParams{Status: StatusInProgress, Now: p.Before, Limit: p.Limit})
	if err != nil {
		return 0, 0, fmt.Errorf("list expired claims: %w", err)
	}
	for _, j := range jobs {
		now := lc.now()
		a := Attempt{
			Attempt: j.AttemptCount, Action: ActionAbandoned, StartedAt: now,
			Error: errLeaseExpired.Error(), Worker: j.Worker,
		}
		j.Attempts = append(j.Attempts, a)
		events := lc.applyOutcome(j, Outcome{Err: errLeaseExpired, Attempted: true, Attempt: a}, a, now)
		won, err := lc.tryWrite(ctx, j, events)
		if err != nil {
			return moved, len(jobs), fmt.Errorf("rescue job %s: %w", j.ID, err)
		}
		if won {
			moved++
			lc.releaseAfter(ctx, j)
		}
	}
	if moved > 0 {
		lc.cfg.Logger.InfoContext(ctx, "rescued jobs", "jobs", moved, "reason", errLeaseExpired.Error())
	}
	return moved, len(jobs), nil
}
