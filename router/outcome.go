package router

import (
	"errors"
	"net/http"
	"strconv"
	"time"
)

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

// retryAfterError carries a receiver's Retry-After.
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
	var r *retryAfterError
	if errors.As(err, &r) {
		return r.after
	}
	return 0
}

// StatusError is a non-2xx answer from a receiver.
type StatusError struct {
	Code int
}

func (e *StatusError) Error() string {
	return "receiver answered " + strconv.Itoa(e.Code) + " " + http.StatusText(e.Code)
}

// classify turns a receiver's status code into the attempt's error: nil for
// 2xx; retryable for 408, 425, 429 and 5xx (with Retry-After honoured on 429
// and 503); permanent for everything else, redirects included.
func classify(code int, header http.Header, now time.Time) error {
	switch {
	case code >= 200 && code < 300:
		return nil
	case code == http.StatusRequestTimeout, code == http.StatusTooEarly, code == http.StatusTooManyRequests, code >= 500:
		err := error(&StatusError{Code: code})
		if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
			if d, ok := parseRetryAfter(header.Get("Retry-After"), now); ok {
				err = RetryAfter(d, err)
			}
		}
		return err
	default:
		return Permanent(&StatusError{Code: code})
	}
}

// parseRetryAfter reads a Retry-After value: delta seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(min(secs, int64(365*24*3600))) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
