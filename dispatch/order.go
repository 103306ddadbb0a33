package dispatch

import (
	"context"
	"fmt"
	"time"

	"github.com/hooklane/hooklane/stream"
)

// The order gate: the rules of the ordered modes (API.md §6), applied
// before a job of a message group is claimed, by push and pull alike.
//   - BLOCK_ON_ERROR: any unfinished earlier job of the group (PENDING,
//     QUEUED, IN_PROGRESS or ERROR) holds the job back.
//   - NEXT_ON_ERROR: a first attempt waits for earlier jobs of the group
//     that have not had their first attempt yet, so first attempts start in
//     ingest order; a job that failed has left the line and holds nobody.
//
// Push jobs travel a FIFO queue group, which already keeps one message of
// a group in flight at a time; pull jobs have no queue, so for them a job
// of the group in flight holds the rest too.

// groupScanLimit bounds the earlier jobs of a group one gate check reads.
const groupScanLimit = 100

// blocker returns the earlier job of j's group that holds j back, nil when
// none does. inFlightHolds makes an IN_PROGRESS job of the group hold j
// whatever its place (pull delivery).
//
//nolint:nilnil // no blocker is an answer, not an error: nil job, nil error
func (lc *Lifecycle) blocker(ctx context.Context, j *Job, inFlightHolds bool) (*Job, error) {
	if !j.Mode.Ordered() || j.MessageGroup == "" {
		return nil, nil
	}
	if inFlightHolds {
		running, err := lc.cfg.Store.JobListGroup(ctx, &JobListGroupParams{
			SubscriptionID: j.SubscriptionID, MessageGroup: j.MessageGroup,
			Statuses: []Status{StatusInProgress}, Limit: 1,
		})
		if err != nil {
			return nil, fmt.Errorf("list jobs in flight of group: %w", err)
		}
		if len(running) > 0 && running[0].ID != j.ID {
			return running[0], nil
		}
	}
	if j.Mode == ModeBlockOnError {
		earlier, err := lc.cfg.Store.JobListGroup(ctx, &JobListGroupParams{
			SubscriptionID: j.SubscriptionID, MessageGroup: j.MessageGroup,
			BeforeOrderKey: j.OrderKey(), Statuses: Unfinished(), Limit: 1,
		})
		if err != nil {
			return nil, fmt.Errorf("list earlier jobs of group: %w", err)
		}
		if len(earlier) > 0 {
			return earlier[0], nil
		}
		return nil, nil
	}
	// NEXT_ON_ERROR: only a first attempt waits.
	if j.AttemptCount > 0 {
		return nil, nil
	}
	earlier, err := lc.cfg.Store.JobListGroup(ctx, &JobListGroupParams{
		SubscriptionID: j.SubscriptionID, MessageGroup: j.MessageGroup,
		BeforeOrderKey: j.OrderKey(), Statuses: []Status{StatusPending, StatusQueued}, Limit: groupScanLimit,
	})
	if err != nil {
		return nil, fmt.Errorf("list earlier jobs of group: %w", err)
	}
	for _, e := range earlier {
		if e.AttemptCount == 0 {
			return e, nil
		}
	}
	return nil, nil
}

// Claimable reports whether a pull job may be claimed now under its
// ordering mode: no job of its group in flight and none before it in line.
// It is the order gate of a pull claim in ClaimGated.
func (lc *Lifecycle) Claimable(ctx context.Context, j *Job) (bool, error) {
	b, err := lc.blocker(ctx, j, true)
	return b == nil, err
}

// HoldForOrder applies the order gate to a QUEUED push job a router
// received, before its claim: the first gate of ClaimGated. held is true when the job must not be
// delivered now; it was then parked PENDING:
//   - BLOCK_ON_ERROR: with BlockedBy naming the blocker and a far
//     NextAttemptAt (BlockedRecheck); the blocker's completion or
//     cancellation releases it (ReleaseGroup).
//   - NEXT_ON_ERROR: due when the earlier job is due, so it comes back
//     after it.
//
// A blocker that looks lost (see LifecycleConfig.LostHeadAfter) is sent to
// the queue again.
func (lc *Lifecycle) HoldForOrder(ctx context.Context, j *Job) (held bool, err error) {
	b, err := lc.blocker(ctx, j, false)
	if err != nil {
		return false, err
	}
	return lc.HoldForOrderBehind(ctx, j, b)
}

// HoldForOrderBehind is HoldForOrder for a caller that has just read j's
// group head with GroupHead: b is that head (nil: none holds j back), so
// the group is not read a second time.
func (lc *Lifecycle) HoldForOrderBehind(ctx context.Context, j, b *Job) (held bool, err error) {
	if b == nil {
		return false, nil
	}
	lc.resendLostHead(ctx, b)
	now := lc.now()
	if j.Mode == ModeBlockOnError {
		until := now.Add(lc.cfg.BlockedRecheck)
		if LostHeadSuspect(b) {
			// Its release may never come (its message lost): look again
			// soon, backing off while it does not move.
			until = lc.heldUntil(b, now)
		}
		if err := lc.Park(ctx, j, ParkParams{
			Until: until, BlockedBy: b.ID, Type: stream.TypeDispatchBlocked,
		}); err != nil {
			return true, err
		}
		// The blocker may have finished between the check and the park:
		// look again, so the release is never missed (a failed look is
		// tried again).
		lc.releaseOrRetry(ctx, j.SubscriptionID, j.MessageGroup)
		return true, nil
	}
	return true, lc.Park(ctx, j, ParkParams{Until: lc.heldUntil(b, now), Reason: "waiting for earlier job " + b.ID + " of its group"})
}

// resendLostHead sends head, an earlier job of the group that holds a later
// one back, to the queue again when it looks lost: QUEUED, never attempted,
// unchanged for LostHeadAfter (see LifecycleConfig). It goes under a new
// version — one version-checked write that keeps it QUEUED, moves its
// UpdatedAt and records a dispatch.queued event — hence under a new
// deduplication id (see Message): a re-send under the old id is dropped by
// an SQS FIFO queue for its 5-minute deduplication window while it answers
// the send with success, so a head whose message was consumed without the
// job moving stayed lost while every re-send looked sent (issue 22). The
// write also bounds the re-sends: the head is unchanged for LostHeadAfter
// again only after that long, however many held jobs reach routers
// meanwhile. A head that is in fact still queued is harmless to send: the
// router drops a message whose job moved on. Failures are logged; the
// stale-queued rescuer remains the safety net.
func (lc *Lifecycle) resendLostHead(ctx context.Context, head *Job) {
	if !LostHeadSuspect(head) {
		return
	}
	if lc.now().Sub(head.UpdatedAt) < lc.cfg.LostHeadAfter {
		return
	}
	queuedAt := head.UpdatedAt
	now := lc.now()
	head.Touch(now)
	ev := lc.event(head, stream.TypeDispatchQueued, now)
	ev.Data.Error = "lost head of its group: sent again"
	won, err := lc.tryWrite(ctx, head, []stream.Event{ev})
	switch {
	case err != nil:
		lc.cfg.Logger.WarnContext(ctx, "send lost head of group", "job_id", head.ID, "error", err)
		return
	case !won:
		return // moved on meanwhile: whoever moved it carries it on
	}
	lc.cfg.Logger.InfoContext(ctx, "sending a lost head of its group again",
		"job_id", head.ID, "message_group", head.MessageGroup, "queued_at", queuedAt)
	if _, err := lc.enq.Enqueue(ctx, []*Job{head}); err != nil {
		lc.cfg.Logger.WarnContext(ctx, "send lost head of group", "job_id", head.ID, "error", err)
	}
}

// ParkParams are the arguments of Park.
type ParkParams struct {
	// Until is when the job is due again.
	Until time.Time
	// BlockedBy names what holds the job: a blocker's id, BlockedByPaused,
	// or "" for a plain wait.
	BlockedBy string
	// Reason is the status event's message.
	Reason string
	// Type is the status event's type; default dispatch.pending.
	Type string
}

// Park moves a QUEUED job the caller read back to PENDING until p.Until,
// held by p.BlockedBy. A job that moved on meanwhile is left alone.
func (lc *Lifecycle) Park(ctx context.Context, j *Job, p ParkParams) error {
	now := lc.now()
	if j.Status != StatusQueued {
		return nil // moved on meanwhile
	}
	_ = j.Transition(StatusPending, now) // QUEUED → PENDING is always allowed
	until := p.Until.UTC().Truncate(time.Millisecond)
	j.NextAttemptAt = &until
	j.BlockedBy = p.BlockedBy
	ev := lc.event(j, cmpOr(p.Type, stream.TypeDispatchPending), now)
	ev.Data.Error = p.Reason
	won, err := lc.tryWrite(ctx, j, []stream.Event{ev})
	if err != nil {
		return fmt.Errorf("park job: %w", err)
	}
	if !won && lc.Unmoved(ctx, j) {
		return fmt.Errorf("park job %s: %w", j.ID, ErrKeepMessage)
	}
	return nil
}

// ParkPaused parks a QUEUED job of a paused subscription; resuming the
// subscription releases it (ReleaseSubscription).
func (lc *Lifecycle) ParkPaused(ctx context.Context, j *Job) error {
	return lc.Park(ctx, j, ParkParams{
		Until: lc.now().Add(lc.cfg.PausedRecheck), BlockedBy: BlockedByPaused, Reason: "subscription paused",
	})
}
