package dispatch

import (
	"context"
	"fmt"
	"sync"
)

// A BLOCK_ON_ERROR group moves on when its blocker finishes: ReleaseGroup
// queues the jobs parked behind it, which otherwise wait BlockedRecheck
// (5 minutes by default). A release runs after the blocker's own write
// has committed, so when it fails — a store slow past the caller's
// deadline, a connection lost — nothing else would release the group
// before the recheck. The failed releases are kept here and tried again by
// QueueDue (the pending poller's round, every few seconds) until one
// succeeds. They live in memory: after a crash the blocked recheck remains
// the safety net.

// releaseRetryMax bounds the groups kept for another release; past it a
// failed release waits for the blocked recheck.
const releaseRetryMax = 10_000

// groupRef names a message group of a subscription.
type groupRef struct{ subscriptionID, group string }

// releaseRetries is the set of groups whose release failed.
type releaseRetries struct {
	mu     sync.Mutex
	groups map[groupRef]struct{}
}

func newReleaseRetries() *releaseRetries {
	return &releaseRetries{groups: map[groupRef]struct{}{}}
}

// add keeps g for another release; false when the set is full.
func (r *releaseRetries) add(g groupRef) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.groups[g]; !ok && len(r.groups) >= releaseRetryMax {
		return false
	}
	r.groups[g] = struct{}{}
	return true
}

// take empties the set and returns what it held.
func (r *releaseRetries) take() []groupRef {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]groupRef, 0, len(r.groups))
	for g := range r.groups {
		out = append(out, g)
	}
	clear(r.groups)
	return out
}

// releaseOrRetry releases a group (ReleaseGroup) and, when that fails,
// keeps it for QueueDue to release again.
func (lc *Lifecycle) releaseOrRetry(ctx context.Context, subscriptionID, group string) {
	if _, err := lc.ReleaseGroup(ctx, subscriptionID, group); err != nil {
		g := groupRef{subscriptionID: subscriptionID, group: group}
		if lc.releases.add(g) {
			lc.cfg.Logger.WarnContext(ctx, "release of a blocked group failed: tried again with the pending poller",
				"subscription_id", subscriptionID, "message_group", group, "error", err)
			return
		}
		lc.cfg.Logger.WarnContext(ctx, "release of a blocked group failed: it waits for the blocked recheck",
			"subscription_id", subscriptionID, "message_group", group, "error", err, "recheck", lc.cfg.BlockedRecheck)
	}
}

// retryReleases releases again the groups whose release failed; those that
// fail again are kept for the next round. It returns how many it released.
func (lc *Lifecycle) retryReleases(ctx context.Context) int {
	n := 0
	for _, g := range lc.releases.take() {
		if ctx.Err() != nil {
			lc.releases.add(g)
			continue
		}
		ok, err := lc.releaseAgain(ctx, g.subscriptionID, g.group)
		if err != nil {
			lc.releases.add(g)
			lc.cfg.Logger.WarnContext(ctx, "release of a blocked group failed again",
				"subscription_id", g.subscriptionID, "message_group", g.group, "error", err)
			continue
		}
		if ok {
			n++
		}
	}
	return n
}

// releaseAgain is ReleaseGroup for a group whose release failed. That
// release may have moved jobs to QUEUED and not sent them: a write can land
// though its caller was told it failed (MongoDB's, when the deadline passes
// on the wire). So when the group's head is a run of QUEUED push jobs
// rather than parked ones, the run is sent again: a message already sent
// is dropped by the queue's deduplication (the job's id and version), or
// else refused at the claim, the job having moved on. It reports whether it
// queued or sent a job.
func (lc *Lifecycle) releaseAgain(ctx context.Context, subscriptionID, group string) (bool, error) {
	head, err := lc.cfg.Store.JobListGroup(ctx, &JobListGroupParams{
		SubscriptionID: subscriptionID, MessageGroup: group, Statuses: Unfinished(), Limit: releaseRunMax,
	})
	if err != nil {
		return false, fmt.Errorf("list head of group %s: %w", group, err)
	}
	if len(head) > 0 && held(head[0]) {
		return lc.queueHeldRun(ctx, head)
	}
	run := leadingRun(head, func(j *Job) bool { return j.Status == StatusQueued && j.Delivery != DeliveryPull })
	if len(run) == 0 {
		return false, nil
	}
	if n, err := lc.Send(ctx, run); n > 0 {
		lc.cfg.Logger.WarnContext(ctx, "jobs left pending after queue send failure", "jobs", n, "error", err)
	}
	return true, nil
}
