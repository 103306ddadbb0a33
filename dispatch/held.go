package dispatch

import (
	"context"
	"errors"
	"time"
)

// What keeps an ordered group moving when its head's message is lost or
// behind (issue 22: after a kill -9 on MongoDB and SQS FIFO, a group's head
// stayed QUEUED with no message while its later jobs went park → pending
// poller → queue → router many times a second).

// ErrKeepMessage is returned (wrapped) by a verb whose version-checked
// write of the job the store refused although the job did not move: the
// MongoDB adapter on FerretDB does for as long as a write guard of a writer
// that died mid-write is not stale. Deleting the job's message then would
// leave it QUEUED with no message, so the router keeps the message and
// receives it again after a back-off.
var ErrKeepMessage = errors.New("job unchanged after a refused write: keep its message")

// GroupHead returns the earlier job of j's message group that holds j back
// under its mode, nil when none does (see HoldForOrder).
func (lc *Lifecycle) GroupHead(ctx context.Context, j *Job) (*Job, error) {
	return lc.blocker(ctx, j, false)
}

// LostHeadSuspect reports whether a group head that holds a job back is a
// QUEUED push job: due for an attempt, so it can be delivered in the held
// job's slot, and its message may be lost or behind the held one. Under
// BLOCK_ON_ERROR it may have been attempted: a claim of a killed router
// that the expired-lease rescuer put back, whose message went behind every
// job of the group posted meanwhile.
func LostHeadSuspect(j *Job) bool {
	return j.Status == StatusQueued && j.Delivery != DeliveryPull
}

// Unmoved reports whether the stored job still has the version j was read
// at (a refused write did not change it): true when a write of j was
// refused with the job as read.
func (lc *Lifecycle) Unmoved(ctx context.Context, j *Job) bool {
	fresh, err := lc.cfg.Store.JobGetByID(ctx, j.ID)
	return err == nil && fresh.Version == j.Version
}

// heldUntil returns when a job held back by head is looked at again. A
// PENDING head is due at its NextAttemptAt (at once when that passed). A
// QUEUED head's message is on its way, or lost: the held job waits as long
// as the head has been waiting since its last change, at most
// LostHeadAfter. Each time the held job comes back to an unmoved head its
// wait doubles (exponential back-off up to LostHeadAfter), so held jobs
// never spin; a head that moves (sent again, started) restarts it from
// zero, so they follow it at once.
func (lc *Lifecycle) heldUntil(head *Job, now time.Time) time.Time {
	if head.Status != StatusQueued {
		if head.NextAttemptAt != nil && head.NextAttemptAt.After(now) {
			return *head.NextAttemptAt
		}
		return now
	}
	waited := max(now.Sub(head.UpdatedAt), 0)
	return now.Add(min(waited, lc.cfg.LostHeadAfter))
}
