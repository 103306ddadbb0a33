package dispatch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/hooklane/hooklane/stream"
)

// BlockedByPaused is the BlockedBy value of a job parked because its
// subscription is paused; resuming the subscription releases it.
const BlockedByPaused = "subscription-paused"

// Unfinished lists the statuses of a job that still holds its
// BLOCK_ON_ERROR group: everything but COMPLETED and CANCELLED (an ERROR job
// holds the group until an operator retries or cancels it).
func Unfinished() []Status {
	return []Status{StatusPending, StatusQueued, StatusInProgress, StatusError}
}

// releaseRunMax bounds how many parked jobs one ReleaseGroup queues.
const releaseRunMax = 100

// ReleaseGroup queues the parked jobs at the head of a BLOCK_ON_ERROR group:
// the leading run of its unfinished jobs (in OrderKey order) that are
// PENDING and held as blocked. Call it after a job of the group completed or
// was cancelled, and after parking a job (to close the race with a blocker
// finishing meanwhile). Queuing the whole run at once lets the queue hand
// the jobs out one by one in order without a release round trip between
// them; the router still checks each against its predecessors before the
// claim, so a job behind one that fails is parked again. It reports whether
// it queued a job.
func (lc *Lifecycle) ReleaseGroup(ctx context.Context, subscriptionID, group string) (bool, error) {
	if group == "" {
		return false, nil
	}
	// Look at the head alone first: usually it is running or failing, and
	// nothing is to be released.
	head, err := lc.cfg.Store.JobListGroup(ctx, &JobListGroupParams{
		SubscriptionID: subscriptionID, MessageGroup: group, Statuses: Unfinished(), Limit: 1,
	})
	if err != nil {
		return false, fmt.Errorf("list head of group %s: %w", group, err)
	}
	if len(head) == 0 || !held(head[0]) {
		return false, nil
	}
	head, err = lc.cfg.Store.JobListGroup(ctx, &JobListGroupParams{
		SubscriptionID: subscriptionID, MessageGroup: group, Statuses: Unfinished(), Limit: releaseRunMax,
	})
	if err != nil {
		return false, fmt.Errorf("list head of group %s: %w", group, err)
	}
	return lc.queueHeldRun(ctx, head)
}

// queueHeldRun queues the leading run of parked jobs of a group's
// unfinished jobs, head: the first job not parked (running, retrying on its
// own schedule, in ERROR, or paused) holds the rest.
func (lc *Lifecycle) queueHeldRun(ctx context.Context, head []*Job) (bool, error) {
	run := leadingRun(head, held)
	if len(run) == 0 {
		return false, nil
	}
	return lc.queue(ctx, run, "blocker finished")
}

// leadingRun returns the jobs from the first up to the first that is not in.
func leadingRun(jobs []*Job, in func(*Job) bool) []*Job {
	for i, j := range jobs {
		if !in(j) {
			return jobs[:i]
		}
	}
	return jobs
}

// held reports whether j is parked behind a blocker (not paused, not
// waiting for its circuit).
func held(j *Job) bool {
	return j.Status == StatusPending && j.BlockedBy != "" && j.BlockedBy != BlockedByPaused && j.BlockedBy != BlockedByCircuit
}

// ReleaseSubscription queues every job of a subscription parked while it was
// paused and returns how many it queued. The API calls it on resume.
func (lc *Lifecycle) ReleaseSubscription(ctx context.Context, subscriptionID string) (int, error) {
	return lc.releaseParked(ctx, subscriptionID, BlockedByPaused, "subscription resumed")
}

// ReleaseCircuit queues every job of a subscription parked by its circuit
// and returns how many it queued: its circuit closed (the probe succeeded,
// an operator resumed the subscription), so the waiting jobs are due at
// once. Jobs are queued in ingest order, so ordered groups keep their order.
func (lc *Lifecycle) ReleaseCircuit(ctx context.Context, subscriptionID string) (int, error) {
	return lc.releaseParked(ctx, subscriptionID, BlockedByCircuit, "circuit closed")
}

// releaseParked queues every PENDING job of a subscription whose BlockedBy
// is blockedBy, in ingest order, and returns how many it queued.
func (lc *Lifecycle) releaseParked(ctx context.Context, subscriptionID, blockedBy, reason string) (int, error) {
	var parked []*Job
	p := &JobListParams{Status: StatusPending, SubscriptionID: subscriptionID, Limit: 500}
	for {
		pg, err := lc.cfg.Store.JobList(ctx, p)
		if err != nil {
			return 0, fmt.Errorf("list pending jobs of subscription %s: %w", subscriptionID, err)
		}
		for _, j := range pg.Jobs {
			if j.BlockedBy == blockedBy {
				parked = append(parked, j)
			}
		}
		if pg.NextCursor == "" {
			break
		}
		p.Cursor = pg.NextCursor
	}
	// Queue in ingest order: ordered modes rely on the send order.
	slices.SortFunc(parked, func(a, b *Job) int {
		if c := cmp.Compare(a.OrderKey(), b.OrderKey()); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	n := 0
	for start := 0; start < len(parked); start += 500 {
		batch := parked[start:min(start+500, len(parked))]
		if err := lc.queueMany(ctx, batch, reason, &n); err != nil {
			return n, err
		}
	}
	return n, nil
}

func (lc *Lifecycle) queue(ctx context.Context, jobs []*Job, reason string) (bool, error) {
	n := 0
	err := lc.queueMany(ctx, jobs, reason, &n)
	return n > 0, err
}

// queueMany moves PENDING jobs to QUEUED and sends the ones it moved, in
// the order given. A job that moved on meanwhile is skipped. The moves are
// independent version-checked writes, run side by side (queueWriters at a
// time, as QueueDue does: the store batches concurrent writes), so
// releasing the thousands of jobs an open circuit held takes seconds, not
// minutes; the sends then follow the given order, which keeps each group's.
// It adds the number queued to *n.
func (lc *Lifecycle) queueMany(ctx context.Context, jobs []*Job, reason string, n *int) error {
	now := lc.now()
	moved := make([]bool, len(jobs))
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, queueWriters)
	var wg sync.WaitGroup
	for i, j := range jobs {
		if err := j.Transition(StatusQueued, now); err != nil {
			continue
		}
		j.BlockedBy = ""
		ev := j.StatusEvent(lc.cfg.NewID(), stream.TypeDispatchQueued, now)
		ev.Data.Error = reason
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			won, err := lc.tryWrite(ctx, j, []stream.Event{ev})
			if err != nil {
				errs[i] = fmt.Errorf("release job %s: %w", j.ID, err)
			}
			moved[i] = won // a loser was moved by another releaser or the pending poller
		})
	}
	wg.Wait()
	var toSend []*Job
	for i, j := range jobs {
		if !moved[i] {
			continue
		}
		*n++
		if j.Delivery != DeliveryPull {
			toSend = append(toSend, j)
		}
	}
	if len(toSend) > 0 {
		// A failed send leaves the job PENDING and due: the pending poller
		// sends it again.
		_, _ = lc.Send(ctx, toSend)
	}
	return errors.Join(errs...)
}
