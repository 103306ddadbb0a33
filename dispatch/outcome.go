package dispatch

import (
	"errors"
	"time"
)

// Outcome is what one delivery attempt came to, whatever carried it (the
// signed HTTP webhook, a pull worker's report, a future destination type).
// Transports return it; the lifecycle verbs decide what follows.
type Outcome struct {
	// Attempt is the record of the attempt: timing, status code, response
	// body. Its Attempt number, Worker and (for push) StartedAt are filled
	// in by the verb when zero.
	Attempt Attempt
	// Err is nil on success. Mark it with Permanent when no retry can fix
	// it, with RetryAfter when the destination asked for a minimum wait;
	// any other error is retryable under the job's policy.
	Err error
	// Attempted is false when nothing was sent (the job cannot be delivered
	// at all): no attempt is recorded, the job ends in ERROR.
	Attempted bool
	// Cancelled, when not empty, calls the delivery off with nothing sent
	// (a transformation that cancelled it, API.md §16): the claim's attempt
	// is not counted, nothing counts toward the circuit, and the job ends
	// CANCELLED with Cancelled as the reason of its dispatch.cancelled
	// event. Attempt, Err and Attempted are then ignored.
	Cancelled string
}

// Succeeded reports whether the attempt succeeded.
func (o Outcome) Succeeded() bool { return o.Err == nil && o.Cancelled == "" }

// permanentError marks a delivery failure that must not be retried.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as a failure no retry can fix (a 4xx answer, a
// redirect, a refused target): the job goes to ERROR at once.
func Permanent(err error) error { return &permanentError{err: err} }

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// retryAfterError carries a destination's minimum wait (Retry-After).
type retryAfterError struct {
	after time.Duration
	err   error
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// RetryAfter marks err as retryable no sooner than d from now.
func RetryAfter(d time.Duration, err error) error { return &retryAfterError{after: d, err: err} }

// RetryAfterOf returns the wait RetryAfter attached to err, 0 when none.
func RetryAfterOf(err error) time.Duration {
	if r, ok := errors.AsType[*retryAfterError](err); ok {
		return r.after
	}
	return 0
}

// nextAttempt is the one retry decision of the gateway, for push
// deliveries, pull workers' failures and abandoned claims alike: after a
// failed attempt of j (j.AttemptCount attempts made) with error err at now,
// the job retries at due when err is not permanent, attempts are left, and
// due — the policy's backoff with jitter, raised to err's Retry-After and
// capped by maxBackoffSeconds — does not pass the job's max age. Otherwise
// retry is false and the job ends in ERROR.
func nextAttempt(j *Job, err error, now time.Time, randFunc func() float64) (due time.Time, retry bool) {
	if IsPermanent(err) || j.AttemptCount >= j.MaxAttempts {
		return time.Time{}, false
	}
	due = now.Add(j.Retry.Backoff(j.AttemptCount, RetryAfterOf(err), randFunc)).Truncate(time.Millisecond)
	if j.MaxAgeSeconds > 0 && due.After(j.AgeDeadline()) {
		return time.Time{}, false
	}
	return due, true
}
