package router

import (
	"context"
	"errors"
	"time"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/store"
)

// A message group's head — its earliest job not yet started (under
// BLOCK_ON_ERROR, not yet finished) — holds the jobs after it back. This
// file keeps a head whose message is lost or behind from stalling its group
// (issue 22). The lifecycle backs off the held jobs while such a head does
// not move and re-sends it under a new version (the order gate of
// dispatch.ClaimGated); the router delivers it first, in the held job's
// slot, and hands the head it read last to that gate.

// retryDelayMax caps retryDelay: the group waits behind the kept message,
// so a long last wait would outlast the refusal by as much.
const retryDelayMax = 8 * time.Second

// retryDelay is how long a message kept after a refused write stays
// invisible: 1 s on its first receive, doubling with each receive, at most
// retryDelayMax and the lease. A write guard left by a killed writer on
// FerretDB (30 s, store/mongostore/guard.go) thus costs about seven
// receives, below a redrive policy's usual maxReceiveCount (10 in
// sqsqueue.CreateQueue's).
func retryDelay(receiveCount int, lease time.Duration) time.Duration {
	return min(time.Second<<min(max(receiveCount-1, 0), 16), retryDelayMax, lease)
}

// inPlaceMax bounds the earlier jobs one message delivers in its slot.
const inPlaceMax = 100

// inPlaceKey marks the context of a delivery in another message's slot.
type inPlaceKey struct{}

// deliverHeadsInPlace delivers, before job, the QUEUED heads of job's
// ordered group that hold it back, one after another, in the slot of job's
// message, until a head does not move (or none is left). The held message
// keeps the FIFO group to this router — the queue hands out no other
// message of the group meanwhile, and a message of a head in flight
// elsewhere would have kept this one from being received — so a head still
// goes first and alone; its claim is the usual version-checked write. A
// message of the head that was lost no longer matters, and one that was
// only behind is dropped when it comes (its job moved on). Without this, the
// held job and every later job of the group queued before the head's
// message went round the queue again (park, pending poller, send) each time
// the head's message was behind them or lost. It is not nested: within an
// in-place delivery the order gate alone applies.
//
// It returns the group head it read last when that is still job's head
// (nil: none holds job back), with known set, so the order gate does not
// read the group again; known is false when it read no head it can vouch
// for (not ordered, nested, shutting down, a read failed, or the bound hit).
func (r *Router) deliverHeadsInPlace(ctx, runCtx context.Context, job *dispatch.Job) (head *dispatch.Job, known bool) {
	if job.MessageGroup == "" || !job.Mode.Ordered() || ctx.Value(inPlaceKey{}) != nil {
		return nil, false
	}
	for range inPlaceMax {
		if runCtx.Err() != nil {
			return nil, false
		}
		head, err := r.cfg.Lifecycle.GroupHead(ctx, job)
		if err != nil {
			return nil, false
		}
		if head == nil || !dispatch.LostHeadSuspect(head) {
			return head, true
		}
		if !r.deliverInPlace(ctx, runCtx, head) {
			// It did not move: it is still the head.
			return head, true
		}
	}
	return nil, false
}

// deliverInPlace runs head through process in another message's slot and
// reports whether head moved on (delivered, parked, cancelled, failed).
func (r *Router) deliverInPlace(ctx, runCtx context.Context, head *dispatch.Job) bool {
	var busy poolBusy
	_, err := r.process(context.WithValue(ctx, inPlaceKey{}, true), runCtx, dispatch.MessageContent{JobID: head.ID}, &busy)
	if err != nil && !errors.Is(err, dispatch.ErrKeepMessage) {
		r.cfg.Logger.WarnContext(ctx, "deliver earlier job of group in place", "job_id", head.ID, "error", err)
	}
	fresh, err := r.cfg.Store.JobGetByID(ctx, head.ID)
	if err != nil {
		return errors.Is(err, store.ErrNotFound)
	}
	moved := fresh.Version != head.Version
	if moved {
		r.cfg.Logger.DebugContext(ctx, "delivered an earlier job of its group in place", "job_id", head.ID,
			"message_group", head.MessageGroup, "status", fresh.Status)
	}
	return moved
}
