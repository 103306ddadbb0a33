package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/stream"
)

// The circuit verbs: the gate a router passes before its claim
// (HoldForCircuit), the counting of every push outcome (countOutcome, from
// RecordOutcome), and the releases and resets that follow. Every circuit
// write is version-checked; a verb that loses re-reads the circuit and
// decides again. The writes of one lifecycle to one subscription's circuit
// that count outcomes, free a probe slot or reset it take turns
// (circuitLocks), so they conflict only with other instances' writes and
// with a gate taking the probe slot.

// BlockedByCircuit is the BlockedBy value of a job parked because its
// subscription's circuit is open (or half-open with another job probing);
// the circuit's closing releases it (ReleaseCircuit).
const BlockedByCircuit = "circuit-open"

// CircuitEvent is what LifecycleConfig.OnCircuitFunc is told happened.
type CircuitEvent string

// Circuit events, for metrics.
const (
	CircuitEventProbeStarted   CircuitEvent = "probe_started"
	CircuitEventProbeSucceeded CircuitEvent = "probe_succeeded"
	CircuitEventProbeFailed    CircuitEvent = "probe_failed"
	CircuitEventOpened         CircuitEvent = "opened"
	CircuitEventClosed         CircuitEvent = "closed"
	CircuitEventDisabled       CircuitEvent = "disabled"
)

// designateScan bounds the pending jobs read to find the next probe.
const designateScan = 50

// circuitsOn reports whether circuits are counted at all.
func (lc *Lifecycle) circuitsOn() bool {
	p := &lc.cfg.Circuit
	return p.Store != nil && (p.Failures > 0 || p.AutoDisableAfter > 0)
}

// gated reports whether j passes through its subscription's circuit: a
// push job of a subscription, with circuit breaking on.
func (lc *Lifecycle) gated(j *Job) bool {
	return lc.cfg.Circuit.Store != nil && lc.cfg.Circuit.Failures > 0 &&
		j.SubscriptionID != "" && j.Delivery != DeliveryPull
}

// Circuit returns the circuit of a subscription: the stored one, or a
// clean CLOSED one when none is stored (or circuits are off).
func (lc *Lifecycle) Circuit(ctx context.Context, subscriptionID string) (*Circuit, error) {
	if lc.cfg.Circuit.Store == nil {
		return closedCircuit(subscriptionID), nil
	}
	c, err := lc.cfg.Circuit.Store.CircuitGet(ctx, subscriptionID)
	if errors.Is(err, store.ErrNotFound) {
		return closedCircuit(subscriptionID), nil
	}
	if err != nil {
		return nil, fmt.Errorf("get circuit of subscription %s: %w", subscriptionID, err)
	}
	return c, nil
}

// writeCircuit stores c with events, version-checked, and reports whether
// it won.
func (lc *Lifecycle) writeCircuit(ctx context.Context, c *Circuit, events []stream.Event) (bool, error) {
	lc.clean.forget(c.SubscriptionID)
	err := lc.cfg.Circuit.Store.CircuitUpdate(ctx, &CircuitUpdateParams{Circuit: c, Events: events, Outbox: lc.outbox(events)})
	lc.clean.forget(c.SubscriptionID) // refuses the clean reads begun before the write landed
	switch {
	case err == nil:
		lc.written(nil, events)
		return true, nil
	case errors.Is(err, store.ErrConflict):
		return false, nil
	default:
		return false, fmt.Errorf("write circuit of subscription %s: %w", c.SubscriptionID, err)
	}
}

// HoldForCircuit applies the circuit of j's subscription to a QUEUED push
// job a router received, after the order gate and right before its claim
// (lease is the claim's length). held is true when the job must not be
// delivered now:
//   - OPEN: it was parked PENDING until the circuit's NextProbeAt,
//     BlockedBy BlockedByCircuit; waiting consumes no attempt;
//   - HALF_OPEN with another job probing: parked until that probe's claim
//     ends (the probe's success releases it at once, ReleaseCircuit);
//   - its max age passed while it waited: it was moved to ERROR.
//
// Otherwise the job may be claimed. When the circuit is due for its probe,
// the job first takes the probe slot with a version-checked write of the
// circuit: of several routers (and instances) racing, exactly one wins and
// the others park their jobs. In an ordered mode the order gate has passed,
// so the probe is its group's head. A job that holds the slot passes again
// (a repeated message of it); the claim decides who sends it.
func (lc *Lifecycle) HoldForCircuit(ctx context.Context, j *Job, lease time.Duration) (held bool, err error) {
	if !lc.gated(j) || lc.clean.fresh(j.SubscriptionID, lc.now()) {
		return false, nil
	}
	for range conflictRetries {
		since := lc.clean.begin()
		c, err := lc.Circuit(ctx, j.SubscriptionID)
		if err != nil {
			return false, err
		}
		now := lc.now()
		lc.clean.saw(c, now, since)
		switch {
		case c.State == CircuitClosed:
			return false, nil
		case c.State == CircuitHalfOpen && c.ProbeJobID == j.ID:
			return false, nil
		case c.State == CircuitOpen && c.NextProbeAt != nil && now.Before(*c.NextProbeAt):
			return true, lc.parkForCircuit(ctx, j, *c.NextProbeAt, "circuit open: waiting for its probe")
		case c.probeHeld(j.ID, now):
			return true, lc.parkForCircuit(ctx, j, *c.ProbeUntil, "circuit half-open: waiting for the probe "+c.ProbeJobID)
		}
		// The probe is due (or the last probe's claim ended unreported).
		if j.Expired(now) {
			return true, lc.expire(ctx, j)
		}
		next := *c
		next.takeProbe(j.ID, now.Add(time.Duration(j.TimeoutSeconds)*time.Second+lease))
		next.UpdatedAt = now
		won, err := lc.writeCircuit(ctx, &next, nil)
		if err != nil {
			return false, err
		}
		if won {
			lc.cfg.Logger.InfoContext(ctx, "circuit probe", "subscription_id", j.SubscriptionID, "job_id", j.ID)
			lc.circuitHook(CircuitEventProbeStarted)
			return false, nil
		}
	}
	// Lost every race: another router is taking the slot right now. Park
	// for a moment; the pending poller brings the job back.
	return true, lc.parkForCircuit(ctx, j, lc.now().Add(time.Second), "circuit half-open: probe being taken")
}

// parkForCircuit parks a QUEUED job until the time until (no later than its max age,
// at which it comes back to be discarded), held by the circuit. The circuit
// may have closed between the read and the park: it is read again, and the
// job released if so.
func (lc *Lifecycle) parkForCircuit(ctx context.Context, j *Job, until time.Time, reason string) error {
	now := lc.now()
	if j.Expired(now) {
		return lc.expire(ctx, j)
	}
	if j.MaxAgeSeconds > 0 {
		if deadline := j.AgeDeadline().Add(time.Millisecond); deadline.Before(until) {
			until = deadline
		}
	}
	if err := lc.Park(ctx, j, ParkParams{Until: until, BlockedBy: BlockedByCircuit, Reason: reason}); err != nil {
		return err
	}
	c, err := lc.Circuit(ctx, j.SubscriptionID)
	if err != nil {
		return err
	}
	if c.State == CircuitClosed && j.Status == StatusPending && j.BlockedBy == BlockedByCircuit {
		if _, err := lc.queue(ctx, []*Job{j}, "circuit closed"); err != nil {
			return fmt.Errorf("release job after circuit closed: %w", err)
		}
	}
	return nil
}

// expire moves a QUEUED job whose max age passed before it could be
// delivered to ERROR (dispatch.discarded), as Claim does.
func (lc *Lifecycle) expire(ctx context.Context, j *Job) error {
	_, err := lc.RecordOutcome(ctx, j, Outcome{Err: Permanent(errors.New("max age passed before delivery"))})
	return err
}

// countOutcome counts a push attempt's outcome into the circuit of j's
// subscription (API.md §12): a success closes it and clears its counts; a
// retryable failure counts, opens a CLOSED circuit at Failures and reopens
// a HALF_OPEN one whose probe it was, with the cooldown doubled; a
// permanent failure (a 4xx ending the job) neither counts nor resets, and
// frees a probe slot it held. Every failure starts the auto-disable clock
// (FailingSince) when it is not running, and a failure that finds it has
// run AutoDisableAfter disables the subscription. The circuit's errors are
// logged, not returned: the outcome itself is recorded already.
func (lc *Lifecycle) countOutcome(ctx context.Context, j *Job, a Attempt, outcomeErr error) {
	if !lc.circuitsOn() || j.SubscriptionID == "" || j.Delivery == DeliveryPull {
		return
	}
	if err := lc.countOutcomeErr(ctx, j, a, outcomeErr); err != nil {
		lc.cfg.Logger.WarnContext(ctx, "count outcome into circuit", "subscription_id", j.SubscriptionID, "job_id", j.ID, "error", err)
	}
}

// circuitChange is what one counted outcome did to a circuit.
type circuitChange struct {
	closed, opened, probeFailed, probeSucceeded, disable bool
}

func (lc *Lifecycle) countOutcomeErr(ctx context.Context, j *Job, a Attempt, outcomeErr error) error {
	if outcomeErr == nil && lc.clean.fresh(j.SubscriptionID, lc.now()) {
		return nil // a success on a clean circuit changes nothing
	}
	if outcomeErr != nil {
		lc.clean.forget(j.SubscriptionID)
	}
	next, ch, now, err := lc.countIntoCircuit(ctx, j, a, outcomeErr)
	if err != nil || next == nil {
		return err
	}
	return lc.afterCircuitChange(ctx, j, next, ch, now)
}

// countIntoCircuit writes one outcome of j into its subscription's
// circuit, holding the subscription's circuit lock, and returns the
// circuit it wrote (nil when the outcome changed nothing), what changed,
// and when. What follows a change (releases, the next probe, the
// auto-disable) is the caller's, after the lock.
func (lc *Lifecycle) countIntoCircuit(ctx context.Context, j *Job, a Attempt, outcomeErr error) (*Circuit, circuitChange, time.Time, error) {
	unlock, err := lc.locks.lock(ctx, j.SubscriptionID)
	if err != nil {
		return nil, circuitChange{}, time.Time{}, fmt.Errorf("circuit of subscription %s: %w", j.SubscriptionID, err)
	}
	defer unlock()
	for range conflictRetries * 2 {
		since := lc.clean.begin()
		c, err := lc.Circuit(ctx, j.SubscriptionID)
		if err != nil {
			return nil, circuitChange{}, time.Time{}, err
		}
		now := lc.now()
		lc.clean.saw(c, now, since)
		next := *c
		ch, changed := lc.applyCircuitOutcome(&next, j, outcomeErr, now)
		if !changed {
			return nil, ch, now, nil
		}
		next.UpdatedAt = now
		events := lc.circuitEvents(&next, j.Subscription, ch, a, outcomeErr, now)
		won, err := lc.writeCircuit(ctx, &next, events)
		if err != nil {
			return nil, circuitChange{}, time.Time{}, err
		}
		if won {
			return &next, ch, now, nil
		}
	}
	return nil, circuitChange{}, time.Time{}, fmt.Errorf("write circuit of subscription %s: %w", j.SubscriptionID, store.ErrConflict)
}

// applyCircuitOutcome applies one outcome of job j to c at now and reports
// what changed, and whether anything did.
func (lc *Lifecycle) applyCircuitOutcome(c *Circuit, j *Job, outcomeErr error, now time.Time) (circuitChange, bool) {
	p := &lc.cfg.Circuit
	var ch circuitChange
	probe := c.State == CircuitHalfOpen && c.ProbeJobID == j.ID
	switch {
	case outcomeErr == nil:
		if c.clean() {
			return ch, false
		}
		ch.closed = c.State != CircuitClosed
		ch.probeSucceeded = probe
		c.close(now)
		return ch, true
	case IsPermanent(outcomeErr):
		changed := false
		if c.FailingSince == nil {
			since := now
			c.FailingSince = &since
			changed = true
		}
		if probe {
			c.freeProbe(now)
			changed = true
		}
		ch.disable = lc.disableDue(c, now)
		return ch, changed || ch.disable
	}
	c.ConsecutiveFailures++
	if c.FailingSince == nil {
		since := now
		c.FailingSince = &since
	}
	switch {
	case p.Failures <= 0:
	case c.State == CircuitClosed && c.ConsecutiveFailures >= p.Failures:
		c.open(now, lc.cooldown())
		ch.opened = true
	case probe:
		c.open(now, min(2*max(c.Cooldown, lc.cooldown()), lc.maxCooldown()))
		ch.opened, ch.probeFailed = true, true
	}
	ch.disable = lc.disableDue(c, now)
	return ch, true
}

func (lc *Lifecycle) cooldown() time.Duration {
	return cmpDuration(lc.cfg.Circuit.Cooldown, CircuitCooldownDefault)
}

func (lc *Lifecycle) maxCooldown() time.Duration {
	return max(cmpDuration(lc.cfg.Circuit.MaxCooldown, CircuitMaxCooldownDefault), lc.cooldown())
}

func cmpDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// disableDue reports whether a failure at now finds the auto-disable clock
// of c run out.
func (lc *Lifecycle) disableDue(c *Circuit, now time.Time) bool {
	after := lc.cfg.Circuit.AutoDisableAfter
	return after > 0 && c.FailingSince != nil && now.Sub(*c.FailingSince) >= after
}

// circuitEvents returns the status events of a circuit's transition.
func (lc *Lifecycle) circuitEvents(c *Circuit, code string, ch circuitChange, a Attempt, outcomeErr error, now time.Time) []stream.Event {
	ev := func(typ, reason string) stream.Event {
		return stream.Event{
			ID: lc.cfg.NewID(), Type: typ, Time: now, Subject: c.SubscriptionID,
			Data: stream.Data{
				Subscription: code, Reason: reason, ConsecutiveFailures: c.ConsecutiveFailures,
				NextProbeAt: c.NextProbeAt,
			},
		}
	}
	switch {
	case ch.closed && ch.probeSucceeded:
		return []stream.Event{ev(stream.TypeSubscriptionCircuitClosed, "the probe succeeded")}
	case ch.closed:
		return []stream.Event{ev(stream.TypeSubscriptionCircuitClosed, "a delivery succeeded")}
	case ch.probeFailed:
		return []stream.Event{ev(stream.TypeSubscriptionCircuitOpened, "the probe failed: "+failureText(a, outcomeErr))}
	case ch.opened:
		return []stream.Event{ev(stream.TypeSubscriptionCircuitOpened,
			strconv.Itoa(c.ConsecutiveFailures)+" consecutive failed attempts, the last: "+failureText(a, outcomeErr))}
	}
	return nil
}

// failureText describes a failed attempt for a status event's reason.
func failureText(a Attempt, err error) string {
	if a.StatusCode > 0 {
		return "HTTP " + strconv.Itoa(a.StatusCode)
	}
	if err != nil {
		return err.Error()
	}
	return "failed"
}

// afterCircuitChange carries a won circuit change on: hooks, the release of
// the waiting jobs on closing, the next probe after a failed one, the
// auto-disable.
func (lc *Lifecycle) afterCircuitChange(ctx context.Context, j *Job, c *Circuit, ch circuitChange, now time.Time) error {
	switch {
	case ch.probeSucceeded:
		lc.circuitHook(CircuitEventProbeSucceeded)
	case ch.probeFailed:
		lc.circuitHook(CircuitEventProbeFailed)
	}
	var errs []error
	if ch.closed {
		lc.circuitHook(CircuitEventClosed)
		lc.cfg.Logger.InfoContext(ctx, "circuit closed", "subscription_id", c.SubscriptionID)
		if _, err := lc.ReleaseCircuit(ctx, c.SubscriptionID); err != nil {
			errs = append(errs, err)
		}
	}
	if ch.opened {
		lc.circuitHook(CircuitEventOpened)
		lc.cfg.Logger.WarnContext(ctx, "circuit opened", "subscription_id", c.SubscriptionID,
			"consecutive_failures", c.ConsecutiveFailures, "next_probe_at", c.NextProbeAt)
	}
	if ch.probeFailed {
		if err := lc.designateProbe(ctx, c.SubscriptionID, *c.NextProbeAt); err != nil {
			errs = append(errs, err)
		}
	}
	if ch.disable {
		if err := lc.disable(ctx, j, c, now); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// disable pauses j's subscription on behalf of the gateway (auto-disable).
func (lc *Lifecycle) disable(ctx context.Context, j *Job, c *Circuit, now time.Time) error {
	reason := fmt.Sprintf("disabled by the gateway at %s: every delivery attempt failed since %s (auto-disable after %s)",
		cloudevent.FormatTime(now), cloudevent.FormatTime(*c.FailingSince), lc.cfg.Circuit.AutoDisableAfter)
	ev := stream.Event{
		ID: lc.cfg.NewID(), Type: stream.TypeSubscriptionDisabled, Time: now, Subject: c.SubscriptionID,
		Data: stream.Data{Subscription: j.Subscription, Reason: reason, ConsecutiveFailures: c.ConsecutiveFailures},
	}
	events := []stream.Event{ev}
	changed, err := lc.cfg.Circuit.Store.SubscriptionDisable(ctx, &SubscriptionDisableParams{
		SubscriptionID: c.SubscriptionID, Reason: reason, At: now, Events: events, Outbox: lc.outbox(events),
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("disable subscription %s: %w", c.SubscriptionID, err)
	}
	if changed {
		lc.written(nil, events)
		lc.circuitHook(CircuitEventDisabled)
		lc.cfg.Logger.WarnContext(ctx, "subscription disabled", "subscription_id", c.SubscriptionID, "reason", reason)
	}
	return nil
}

// designateProbe makes the oldest job parked by the circuit of a
// subscription due at at, the circuit's new NextProbeAt, so the next probe
// goes then: the jobs parked while the failed probe ran wait until its
// claim's end, which may be later.
func (lc *Lifecycle) designateProbe(ctx context.Context, subscriptionID string, at time.Time) error {
	jobs, err := lc.cfg.Store.JobListDue(ctx, &JobListDueParams{
		Status: StatusPending, Now: at.Add(100 * 365 * 24 * time.Hour), Limit: designateScan, SubscriptionID: subscriptionID,
	})
	if err != nil {
		return fmt.Errorf("list jobs waiting for the circuit: %w", err)
	}
	for _, j := range jobs {
		if j.BlockedBy != BlockedByCircuit {
			continue
		}
		if j.NextAttemptAt != nil && !j.NextAttemptAt.After(at) {
			return nil // one comes due by then already
		}
		now := lc.now()
		j.NextAttemptAt = &at
		j.Touch(now)
		ev := lc.event(j, stream.TypeDispatchPending, now)
		ev.Data.Error = "circuit open: the next probe"
		if _, err := lc.tryWrite(ctx, j, []stream.Event{ev}); err != nil {
			return fmt.Errorf("designate next probe: %w", err)
		}
		return nil
	}
	return nil
}

// freeProbeOf frees the probe slot j holds, if it does: j ended without
// the endpoint's answer (its max age passed at the claim, its router shut
// down before sending). The circuit is due for a probe again at once.
func (lc *Lifecycle) freeProbeOf(ctx context.Context, j *Job) {
	if !lc.gated(j) {
		return
	}
	unlock, err := lc.locks.lock(ctx, j.SubscriptionID)
	if err != nil {
		lc.cfg.Logger.WarnContext(ctx, "free probe slot", "subscription_id", j.SubscriptionID, "job_id", j.ID, "error", err)
		return
	}
	defer unlock()
	for range conflictRetries {
		c, err := lc.Circuit(ctx, j.SubscriptionID)
		if err != nil || c.State != CircuitHalfOpen || c.ProbeJobID != j.ID {
			return
		}
		now := lc.now()
		next := *c
		next.freeProbe(now)
		next.UpdatedAt = now
		won, err := lc.writeCircuit(ctx, &next, nil)
		if err != nil {
			lc.cfg.Logger.WarnContext(ctx, "free probe slot", "subscription_id", j.SubscriptionID, "job_id", j.ID, "error", err)
			return
		}
		if won {
			return
		}
	}
}

// ResetCircuit closes a subscription's circuit and clears its counts and
// its auto-disable clock (an operator resumed the subscription), emitting
// subscription.circuit.closed when it was not CLOSED, and releases the jobs
// the circuit held. code is the subscription's code, for the status event.
func (lc *Lifecycle) ResetCircuit(ctx context.Context, subscriptionID, code string) error {
	if lc.cfg.Circuit.Store == nil {
		return nil
	}
	closeErr := lc.closeCircuit(ctx, subscriptionID, code)
	// Released even when the close failed: a job the circuit still holds
	// is parked again by the gate, and none waits longer than it must.
	_, err := lc.ReleaseCircuit(ctx, subscriptionID)
	return errors.Join(closeErr, err)
}

// closeCircuit is ResetCircuit's write, under the subscription's circuit
// lock.
func (lc *Lifecycle) closeCircuit(ctx context.Context, subscriptionID, code string) error {
	unlock, err := lc.locks.lock(ctx, subscriptionID)
	if err != nil {
		return fmt.Errorf("circuit of subscription %s: %w", subscriptionID, err)
	}
	defer unlock()
	for range conflictRetries {
		c, err := lc.Circuit(ctx, subscriptionID)
		if err != nil {
			return err
		}
		if c.clean() {
			return nil
		}
		now := lc.now()
		next := *c
		next.close(now)
		var events []stream.Event
		if c.State != CircuitClosed {
			events = []stream.Event{{
				ID: lc.cfg.NewID(), Type: stream.TypeSubscriptionCircuitClosed, Time: now, Subject: subscriptionID,
				Data: stream.Data{Subscription: code, Reason: "the subscription was resumed"},
			}}
		}
		won, err := lc.writeCircuit(ctx, &next, events)
		if err != nil {
			return err
		}
		if won {
			if len(events) > 0 {
				lc.circuitHook(CircuitEventClosed)
			}
			return nil
		}
	}
	return fmt.Errorf("close circuit of subscription %s: %w", subscriptionID, store.ErrConflict)
}

// outbox returns the status events of a circuit or subscription write that
// go to the operational outbox: all of them (every such event is an
// operational one) when CircuitPolicy.DurableEvents is set, else none.
func (lc *Lifecycle) outbox(events []stream.Event) []stream.Event {
	if !lc.cfg.Circuit.DurableEvents {
		return nil
	}
	return events
}

// circuitHook calls OnCircuitFunc when set.
func (lc *Lifecycle) circuitHook(ev CircuitEvent) {
	if lc.cfg.OnCircuitFunc != nil {
		lc.cfg.OnCircuitFunc(ev)
	}
}
