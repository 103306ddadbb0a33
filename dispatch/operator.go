package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/stream"
)

// Retry is an operator's retry (API.md §5): an ERROR or CANCELLED job gets
// maxAttempts more attempts, its max-age window restarts now (RetriedAt),
// and it goes back into the line at once (QUEUED and sent; a pull job waits
// QUEUED for a worker). Its attemptCount keeps counting. Any other status
// is a *NotAllowedError. The move is recorded as a dispatch.queued status event,
// not in the job's attempts.
func (lc *Lifecycle) Retry(ctx context.Context, id string) (*Job, error) {
	j, err := lc.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return lc.retry(ctx, j)
}

func (lc *Lifecycle) retry(ctx context.Context, j *Job) (*Job, error) {
	j, err := lc.mutate(ctx, j, func(j *Job, now time.Time) ([]stream.Event, error) {
		if j.Status != StatusError && j.Status != StatusCancelled {
			return nil, &NotAllowedError{Status: j.Status, Verb: "retried (only ERROR and CANCELLED jobs can be)"}
		}
		_ = j.Transition(StatusQueued, now)
		j.MaxAttempts = j.AttemptCount + j.Retry.WithDefaults().MaxAttempts
		retried := now
		j.RetriedAt = &retried
		ev := lc.event(j, stream.TypeDispatchQueued, now)
		ev.Data.Error = "retried by an operator"
		return []stream.Event{ev}, nil
	})
	if err != nil {
		return nil, err
	}
	if _, err := lc.Send(ctx, []*Job{j}); err != nil {
		lc.cfg.Logger.WarnContext(ctx, "retried job left pending after queue send failure", "job_id", j.ID, "error", err)
	}
	return j, nil
}

// RetryMany retries every job p lists (an operator's bulk redrive; p.Status
// should be ERROR or CANCELLED) and returns how many it retried. A job that
// moved on meanwhile is skipped.
func (lc *Lifecycle) RetryMany(ctx context.Context, p *JobListParams) (int, error) {
	n := 0
	err := lc.each(ctx, p, func(j *Job) error {
		if _, err := lc.retry(ctx, j); err != nil {
			if errors.Is(err, ErrInvalidTransition) || errors.Is(err, store.ErrNotFound) {
				return nil
			}
			return err
		}
		n++
		return nil
	})
	return n, err
}

// Cancel cancels a job (API.md §5): PENDING, QUEUED, ERROR or IN_PROGRESS
// (whose running attempt finishes but is not retried) → CANCELLED, with
// reason in the dispatch.cancelled event. The running attempt of a push job
// is recorded ABANDONED until its outcome replaces the entry (RecordOutcome),
// so that the attempts stay numbered 1…AttemptCount even if the outcome
// never comes (its router died) or comes after the job was retried and
// claimed again. A COMPLETED or CANCELLED job is a *NotAllowedError. The
// next job of its BLOCK_ON_ERROR group is released.
func (lc *Lifecycle) Cancel(ctx context.Context, id, reason string) (*Job, error) {
	j, err := lc.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return lc.cancel(ctx, j, reason)
}

// errCancelledRunning is the failure recorded for a push attempt that ran
// when its job was cancelled, until the attempt's own outcome arrives.
var errCancelledRunning = errors.New("cancelled while the attempt ran")

func (lc *Lifecycle) cancel(ctx context.Context, j *Job, reason string) (*Job, error) {
	j, err := lc.mutate(ctx, j, func(j *Job, now time.Time) ([]stream.Event, error) {
		running := j.Status == StatusInProgress && j.Delivery != DeliveryPull && j.AttemptCount > 0
		worker := j.Worker
		if err := j.Transition(StatusCancelled, now); err != nil {
			return nil, &NotAllowedError{Status: j.Status, Verb: "cancelled"}
		}
		if running {
			j.recordAttempt(Attempt{
				Attempt: j.AttemptCount, Action: ActionAbandoned, StartedAt: now,
				Error: errCancelledRunning.Error(), Worker: worker,
			})
		}
		ev := lc.event(j, stream.TypeDispatchCancelled, now)
		ev.Data.Error = reason
		return []stream.Event{ev}, nil
	})
	if err != nil {
		return nil, err
	}
	lc.releaseAfter(ctx, j)
	return j, nil
}

// CancelSubscription cancels every undelivered job (PENDING, QUEUED,
// IN_PROGRESS, ERROR) of a subscription, with reason, and returns how many
// it cancelled, then deletes the subscription's circuit: the cascade of a
// subscription's deletion. A job created by a request racing with the
// deletion and missed here is cancelled by the router, which finds its
// subscription gone.
func (lc *Lifecycle) CancelSubscription(ctx context.Context, subscriptionID, reason string) (int, error) {
	n, err := lc.cancelSubscriptionJobs(ctx, subscriptionID, reason)
	if err != nil || lc.cfg.Circuit.Store == nil {
		return n, err
	}
	if err := lc.cfg.Circuit.Store.CircuitDelete(ctx, subscriptionID); err != nil {
		return n, fmt.Errorf("delete circuit of subscription %s: %w", subscriptionID, err)
	}
	return n, nil
}

func (lc *Lifecycle) cancelSubscriptionJobs(ctx context.Context, subscriptionID, reason string) (int, error) {
	n := 0
	for _, st := range Unfinished() {
		err := lc.each(ctx, &JobListParams{SubscriptionID: subscriptionID, Status: st}, func(j *Job) error {
			if _, err := lc.cancel(ctx, j, reason); err != nil {
				if errors.Is(err, ErrInvalidTransition) || errors.Is(err, store.ErrNotFound) {
					return nil
				}
				return err
			}
			n++
			return nil
		})
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// each calls fn for every job p lists, page by page.
func (lc *Lifecycle) each(ctx context.Context, p *JobListParams, fn func(j *Job) error) error {
	q := *p
	q.Limit = listPageMax
	for {
		pg, err := lc.cfg.Store.JobList(ctx, &q)
		if err != nil {
			return fmt.Errorf("list jobs: %w", err)
		}
		for _, j := range pg.Jobs {
			if err := fn(j); err != nil {
				return err
			}
		}
		if pg.NextCursor == "" {
			return nil
		}
		q.Cursor = pg.NextCursor
	}
}

// listPageMax is the page size of the verbs that walk a job list.
const listPageMax = 500
