package webhook

import (
	"net/http"
	"strconv"
	"time"

	"github.com/hooklane/hooklane/dispatch"
)

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
				err = dispatch.RetryAfter(d, err)
			}
		}
		return err
	default:
		return dispatch.Permanent(&StatusError{Code: code})
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
