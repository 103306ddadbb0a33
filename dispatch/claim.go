package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/stream"
)

// Errors of the claim verbs. Each matches store.ErrConflict too, so a
// caller that only needs "someone else has it" can test for that.
var (
	// ErrClaimLost is returned by Claim when another writer moved the job
	// first (another router or worker claimed it, an operator cancelled
	// it): the caller drops it; whoever moved it carries it on.
	ErrClaimLost = fmt.Errorf("job claimed or moved by another writer: %w", store.ErrConflict)
	// ErrExpired is returned by Claim when the job's max age passed before
	// it could be claimed: it was moved to ERROR instead.
	ErrExpired = errors.New("job max age passed before delivery")
	// ErrNotHolder is returned when a worker reports on, or extends, a
	// claim it does not hold.
	ErrNotHolder = fmt.Errorf("the job is held by another worker: %w", store.ErrConflict)
	// ErrLeaseLost is returned by RecordOutcome when the claim's lease
	// expired and another claim holds the job now (another worker's, or a
	// later one of the same worker): the attempt is not recorded (the
	// rescue recorded it ABANDONED; the new holder's will be recorded).
	ErrLeaseLost = fmt.Errorf("the claim's lease expired and another worker holds the job: %w", store.ErrConflict)
)

// ClaimParams are the arguments of Claim.
type ClaimParams struct {
	// Worker names the claimant ("host:pid" of a router, a pull worker's id).
	Worker string
	// Lease is how long the claim lasts from now; an unfinished claim is
	// then recovered by RescueExpired.
	Lease time.Duration
	// Pull records the claim in the job's audit log as a PICKED entry (a
	// pull worker's; push attempts are recorded when they end).
	Pull bool
}

// Claim moves a QUEUED job, as read by the caller, to IN_PROGRESS for
// p.Worker under a lease, counting the attempt and emitting
// dispatch.started. It is one version-checked write: of several claimants
// exactly one wins, the others get ErrClaimLost. A job whose max age has
// passed is moved to ERROR instead (dispatch.discarded) and ErrExpired is
// returned. On success j is the claimed job.
func (lc *Lifecycle) Claim(ctx context.Context, j *Job, p ClaimParams) error {
	now := lc.now()
	if j.Status != StatusQueued {
		return ErrClaimLost
	}
	if j.Expired(now) {
		if _, err := lc.RecordOutcome(ctx, j, Outcome{Err: Permanent(errors.New("max age passed before delivery"))}); err != nil {
			return err
		}
		lc.freeProbeOf(ctx, j)
		return ErrExpired
	}
	if err := j.Transition(StatusInProgress, now); err != nil {
		return ErrClaimLost
	}
	j.AttemptCount++
	j.Worker = p.Worker
	lease := now.Add(p.Lease)
	j.LeaseExpiresAt = &lease
	if p.Pull {
		j.Attempts = append(j.Attempts, Attempt{Attempt: j.AttemptCount, Action: ActionPicked, StartedAt: now, Worker: p.Worker})
	}
	ev := lc.event(j, stream.TypeDispatchStarted, now)
	ev.Data.Worker = p.Worker
	won, err := lc.tryWrite(ctx, j, []stream.Event{ev})
	if err != nil {
		return fmt.Errorf("claim job %s: %w", j.ID, err)
	}
	if !won {
		return ErrClaimLost
	}
	return nil
}

// RecordOutcome records a push attempt's outcome on the job the caller
// claimed and moves it on: COMPLETED on success; PENDING until the next
// attempt when the failure is retryable and the policy allows (see
// nextAttempt); ERROR otherwise. An outcome that was not Attempted moves a
// QUEUED job the caller read, or the caller's claim, straight to ERROR.
//
// When the caller's claim ended meanwhile (an operator cancelled the job,
// or its lease expired and the rescuer moved it), the attempt is still
// recorded in its place, over the ABANDONED entry of a rescue, and the
// newer state is kept; an outcome that was not Attempted then changes
// nothing. When another claim holds the job now (another worker's, or a
// later one of the same worker, told apart by the attempt number), the
// result is ErrLeaseLost and the attempt is not recorded: its ABANDONED
// entry stands for it. A job that no longer holds its BLOCK_ON_ERROR group
// releases the next one. An outcome Cancelled (nothing sent) moves the
// caller's claim to CANCELLED, uncounted. It returns the job as written (as
// read when nothing changed).
func (lc *Lifecycle) RecordOutcome(ctx context.Context, j *Job, o Outcome) (*Job, error) {
	if o.Cancelled != "" {
		o.Attempted, o.Err = false, nil
	}
	worker, attempt, read := j.Worker, j.AttemptCount, j.Status
	a := o.Attempt
	if o.Attempted {
		a.Attempt = attempt
		a.Worker = cmpOr(a.Worker, worker)
		if o.Err != nil && a.Error == "" {
			a.Error = o.Err.Error()
		}
	}
	recorded := false // whether this call recorded the attempt (not a repeat)
	j, err := lc.mutate(ctx, j, func(j *Job, now time.Time) ([]stream.Event, error) {
		recorded = false
		if o.Attempted && a.StartedAt.IsZero() {
			a.StartedAt = now.Add(-time.Duration(a.DurationMs) * time.Millisecond)
		}
		switch {
		case j.Status == StatusInProgress && (j.Worker != worker || j.AttemptCount != attempt):
			return nil, ErrLeaseLost
		case j.Status == StatusInProgress && o.Cancelled != "":
			j.AttemptCount-- // claimed, but nothing was sent: no attempt to count
			if err := j.Transition(StatusCancelled, now); err != nil {
				return nil, fmt.Errorf("cancel job %s: %w", j.ID, err)
			}
			ev := lc.event(j, stream.TypeDispatchCancelled, now)
			ev.Data.Error = o.Cancelled
			return []stream.Event{ev}, nil
		case j.Status == StatusInProgress:
			if o.Attempted {
				recorded = j.recordAttempt(a)
			} else {
				j.AttemptCount-- // claimed, but nothing was sent: no attempt to count
			}
			return lc.applyOutcome(j, o, a, now), nil
		case j.Status == StatusQueued && read == StatusQueued && !o.Attempted:
			// A job the caller read QUEUED that cannot be delivered.
			return lc.applyOutcome(j, o, a, now), nil
		case o.Attempted && j.recordAttempt(a):
			// The claim ended while the attempt ran: the attempt is
			// recorded, the status kept.
			recorded = true
			j.Touch(now)
			return nil, nil
		default:
			return nil, errUnchanged
		}
	})
	if err != nil {
		return nil, err
	}
	if recorded {
		// The endpoint's health and circuit count each attempt once: a
		// repeated outcome of an attempt already recorded is not counted.
		lc.countOutcome(ctx, j, a, o.Err)
		lc.attemptHook(j, a, o.Err)
	}
	lc.releaseAfter(ctx, j)
	return j, nil
}

// attemptHook calls OnAttemptFunc for an attempt of a subscription's job.
func (lc *Lifecycle) attemptHook(j *Job, a Attempt, err error) {
	if lc.cfg.OnAttemptFunc != nil && j.SubscriptionID != "" {
		lc.cfg.OnAttemptFunc(j, a, err)
	}
}

// recordAttempt records a, the outcome of push attempt a.Attempt, in the
// job's attempts, which stay numbered 1…AttemptCount in order without gaps
// or repeats: over that attempt's ABANDONED entry (its lease expired, or it
// was cancelled, while it ran, and its real end arrived after all); not at
// all when that attempt is recorded already; else in its place by number
// (at the end, but for a late outcome). It reports whether the attempts
// changed.
func (j *Job) recordAttempt(a Attempt) bool {
	at := len(j.Attempts)
	for i := len(j.Attempts) - 1; i >= 0 && j.Attempts[i].Attempt >= a.Attempt; i-- {
		e := &j.Attempts[i]
		if e.Attempt > a.Attempt {
			at = i
			continue
		}
		switch e.Action {
		case ActionAbandoned:
			*e = a
			return true
		case "":
			return false
		}
	}
	j.Attempts = slices.Insert(j.Attempts, at, a)
	return true
}

// applyOutcome moves a claimed job (or a QUEUED one that cannot be
// delivered) on after an outcome whose record a is already appended, and
// returns the status events of the move.
func (lc *Lifecycle) applyOutcome(j *Job, o Outcome, a Attempt, now time.Time) []stream.Event {
	ev := func(typ string) stream.Event {
		e := lc.event(j, typ, now)
		e.Data.StatusCode = a.StatusCode
		e.Data.DurationMs = a.DurationMs
		e.Data.Attempt = a.Attempt
		if o.Err != nil {
			e.Data.Error = o.Err.Error()
		}
		return e
	}
	if o.Err == nil {
		_ = j.Transition(StatusCompleted, now)
		j.LastError = nil
		return []stream.Event{ev(stream.TypeDispatchCompleted)}
	}
	msg := o.Err.Error()
	j.LastError = &msg
	if o.Attempted {
		if due, retry := nextAttempt(j, o.Err, now, lc.cfg.RandFunc); retry {
			_ = j.Transition(StatusPending, now)
			j.NextAttemptAt = &due
			return []stream.Event{ev(stream.TypeDispatchFailed)}
		}
	}
	var events []stream.Event
	if o.Attempted {
		// The failed event is stamped before the transition, so move
		// UpdatedAt past the job's last change first: its id must sort
		// after the job's earlier events (see StatusEvent), also when the
		// instance that wrote the last one runs ahead of this one.
		j.Touch(now)
		events = append(events, ev(stream.TypeDispatchFailed))
	}
	_ = j.Transition(StatusError, now)
	return append(events, ev(stream.TypeDispatchDiscarded))
}

// Report applies a pull worker's report on a job it claimed: the outcome's
// record is added to the audit log with action (ActionCompleted or
// ActionFailed), then the job moves on as RecordOutcome says (a failure is
// retryable unless marked Permanent). A report the same worker already made
// (the job no longer IN_PROGRESS and its last entry this worker's action) is
// a repeat: the job is returned as it is, with repeat true. A report on a
// job another worker holds is ErrNotHolder; on a job not IN_PROGRESS, a
// *NotAllowedError.
func (lc *Lifecycle) Report(ctx context.Context, id, worker, action string, o Outcome) (j *Job, repeat bool, err error) {
	if j, err = lc.Get(ctx, id); err != nil {
		return nil, false, err
	}
	o.Attempted = true
	j, err = lc.mutate(ctx, j, func(j *Job, now time.Time) ([]stream.Event, error) {
		if j.Status != StatusInProgress {
			if n := len(j.Attempts); n > 0 && j.Attempts[n-1].Action == action && j.Attempts[n-1].Worker == worker {
				repeat = true
				return nil, errUnchanged
			}
			return nil, &NotAllowedError{Status: j.Status, Verb: "reported on (it is not IN_PROGRESS)"}
		}
		if j.Worker != worker {
			return nil, ErrNotHolder
		}
		a := o.Attempt
		a.Attempt, a.Action, a.Worker = j.AttemptCount, action, worker
		a.StartedAt = now.Add(-time.Duration(a.DurationMs) * time.Millisecond)
		if o.Err != nil {
			a.Error = o.Err.Error()
		}
		j.Attempts = append(j.Attempts, a)
		return lc.applyOutcome(j, o, a, now), nil
	})
	if err != nil {
		return nil, false, err
	}
	if repeat {
		return j, true, nil
	}
	if n := len(j.Attempts); n > 0 {
		lc.attemptHook(j, j.Attempts[n-1], o.Err)
	}
	lc.releaseAfter(ctx, j)
	return j, false, nil
}

// Heartbeat extends the lease of a job worker holds to lease from now and
// returns the job. ErrNotHolder when the worker does not hold it.
func (lc *Lifecycle) Heartbeat(ctx context.Context, id, worker string, lease time.Duration) (*Job, error) {
	j, err := lc.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return lc.mutate(ctx, j, func(j *Job, now time.Time) ([]stream.Event, error) {
		if j.Status != StatusInProgress || j.Worker != worker {
			return nil, ErrNotHolder
		}
		until := now.Add(lease)
		j.LeaseExpiresAt = &until
		j.Touch(now)
		return nil, nil
	})
}

// HandBack returns a job the caller claimed but never started (its router
// is shutting down) to PENDING, due at once, and undoes the attempt count.
// A job that moved on meanwhile is left alone.
func (lc *Lifecycle) HandBack(ctx context.Context, j *Job, reason string) error {
	now := lc.now()
	if j.Status != StatusInProgress {
		return nil // moved on meanwhile
	}
	_ = j.Transition(StatusPending, now) // IN_PROGRESS → PENDING is always allowed
	j.AttemptCount--
	j.NextAttemptAt = &now
	ev := lc.event(j, stream.TypeDispatchPending, now)
	ev.Data.Error = reason
	if _, err := lc.tryWrite(ctx, j, []stream.Event{ev}); err != nil {
		return fmt.Errorf("hand job back: %w", err)
	}
	lc.freeProbeOf(ctx, j)
	return nil
}

// releaseAfter lets the next job of a BLOCK_ON_ERROR group go once j no
// longer holds it (COMPLETED or CANCELLED). A release that fails is tried
// again (releaseOrRetry): j's own write stands either way.
func (lc *Lifecycle) releaseAfter(ctx context.Context, j *Job) {
	if j.Mode != ModeBlockOnError || j.MessageGroup == "" ||
		(j.Status != StatusCompleted && j.Status != StatusCancelled) {
		return
	}
	lc.releaseOrRetry(ctx, j.SubscriptionID, j.MessageGroup)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
