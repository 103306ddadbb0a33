package dispatch

import (
	"math/rand/v2"
	"time"
)

// Retry is a retry policy (API.md §6).
type Retry struct {
	// MaxAttempts is how many attempts a job gets in all. Default 8.
	MaxAttempts int `json:"maxAttempts"`
	// InitialBackoffSeconds is the base wait before the second attempt.
	// Default 5.
	InitialBackoffSeconds int `json:"initialBackoffSeconds"`
	// MaxBackoffSeconds caps every wait, Retry-After included. Default 3600.
	MaxBackoffSeconds int `json:"maxBackoffSeconds"`
}

// Retry policy defaults.
const (
	MaxAttemptsDefault           = 8
	InitialBackoffSecondsDefault = 5
	MaxBackoffSecondsDefault     = 3600
	TimeoutSecondsDefault        = 30
	TimeoutSecondsMax            = 300
	MaxAgeSecondsDefault         = 86400
)

// WithDefaults returns r with zero fields set to their defaults.
func (r Retry) WithDefaults() Retry {
	if r.MaxAttempts == 0 {
		r.MaxAttempts = MaxAttemptsDefault
	}
	if r.InitialBackoffSeconds == 0 {
		r.InitialBackoffSeconds = InitialBackoffSecondsDefault
	}
	if r.MaxBackoffSeconds == 0 {
		r.MaxBackoffSeconds = MaxBackoffSecondsDefault
	}
	return r
}

// Backoff returns how long to wait before attempt n+1 after attempt n
// failed: a random time in [d/2, d] with d = min(max, initial × 2^(n−1)),
// raised to at least retryAfter (when positive) and capped by max. randFunc
// returns a float in [0, 1); nil uses math/rand/v2.
func (r Retry) Backoff(n int, retryAfter time.Duration, randFunc func() float64) time.Duration {
	r = r.WithDefaults()
	if randFunc == nil {
		randFunc = rand.Float64
	}
	maxWait := time.Duration(r.MaxBackoffSeconds) * time.Second
	d := time.Duration(r.InitialBackoffSeconds) * time.Second
	for i := 1; i < n && d < maxWait; i++ {
		d *= 2
	}
	d = min(d, maxWait)
	wait := d/2 + time.Duration(randFunc()*float64(d-d/2))
	if retryAfter > wait {
		wait = min(retryAfter, maxWait)
	}
	return wait
}
