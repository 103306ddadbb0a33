package dispatch_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	r := dispatch.Retry{MaxAttempts: 8, InitialBackoffSeconds: 5, MaxBackoffSeconds: 60}
	lo := func() float64 { return 0 }
	hi := func() float64 { return 0.999999 }
	tests := []struct {
		name       string
		n          int
		retryAfter time.Duration
		rnd        func() float64
		min, max   time.Duration
	}{
		{"first retry, low jitter", 1, 0, lo, 2500 * time.Millisecond, 2500 * time.Millisecond},
		{"first retry, high jitter", 1, 0, hi, 4999 * time.Millisecond, 5 * time.Second},
		{"doubles", 3, 0, hi, 19999 * time.Millisecond, 20 * time.Second},
		{"capped", 10, 0, hi, 59999 * time.Millisecond, 60 * time.Second},
		{"capped low jitter", 10, 0, lo, 30 * time.Second, 30 * time.Second},
		{"retry-after raises", 1, 40 * time.Second, lo, 40 * time.Second, 40 * time.Second},
		{"retry-after below backoff ignored", 3, time.Second, lo, 10 * time.Second, 10 * time.Second},
		{"retry-after capped", 1, time.Hour, lo, 60 * time.Second, 60 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := r.Backoff(tt.n, tt.retryAfter, tt.rnd)
			require.GreaterOrEqual(t, got, tt.min)
			require.LessOrEqual(t, got, tt.max)
		})
	}
}

func TestAgeWindow(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	retried := created.Add(2 * time.Hour)
	tests := []struct {
		name     string
		maxAge   int
		attempts []dispatch.Attempt
		at       time.Time
		expired  bool
	}{
		{"fresh", 60, nil, created.Add(59 * time.Second), false},
		{"past", 60, nil, created.Add(61 * time.Second), true},
		{"no limit", 0, nil, created.Add(1000 * time.Hour), false},
		{
			"operator retry restarts the window", 60,
			[]dispatch.Attempt{{Attempt: 3}, {Attempt: 3, Action: dispatch.ActionRetried, StartedAt: retried}},
			retried.Add(30 * time.Second), false,
		},
		{
			"restarted window passes too", 60,
			[]dispatch.Attempt{{Action: dispatch.ActionRetried, StartedAt: retried}},
			retried.Add(61 * time.Second), true,
		},
		{"latest retry counts", 60, []dispatch.Attempt{
			{Action: dispatch.ActionRetried, StartedAt: created.Add(time.Hour)},
			{Action: dispatch.ActionRetried, StartedAt: retried},
		}, retried.Add(59 * time.Second), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := &dispatch.Job{CreatedAt: created, MaxAgeSeconds: tt.maxAge, Attempts: tt.attempts}
			require.Equal(t, tt.expired, j.Expired(tt.at))
		})
	}
}

func TestTransitions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		from, to dispatch.Status
		ok       bool
	}{
		{dispatch.StatusPending, dispatch.StatusQueued, true},
		{dispatch.StatusQueued, dispatch.StatusInProgress, true},
		{dispatch.StatusQueued, dispatch.StatusPending, true}, // parked: blocked or paused
		{dispatch.StatusInProgress, dispatch.StatusCompleted, true},
		{dispatch.StatusInProgress, dispatch.StatusPending, true},
		{dispatch.StatusInProgress, dispatch.StatusCancelled, true},
		{dispatch.StatusError, dispatch.StatusPending, true},
		{dispatch.StatusError, dispatch.StatusCancelled, true},
		{dispatch.StatusCancelled, dispatch.StatusPending, true},
		{dispatch.StatusCompleted, dispatch.StatusPending, false},
		{dispatch.StatusCompleted, dispatch.StatusCancelled, false},
		{dispatch.StatusCancelled, dispatch.StatusCancelled, false},
		{dispatch.StatusError, dispatch.StatusQueued, true},     // an operator retry queued at once
		{dispatch.StatusCancelled, dispatch.StatusQueued, true}, // likewise
		{dispatch.StatusError, dispatch.StatusInProgress, false},
		{dispatch.StatusCompleted, dispatch.StatusQueued, false},
		{dispatch.StatusPending, dispatch.StatusCompleted, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.from)+"→"+string(tt.to), func(t *testing.T) {
			t.Parallel()
			now := time.Now()
			blocked := "01BLOCKER"
			j := &dispatch.Job{Status: tt.from, BlockedBy: blocked}
			err := j.Transition(tt.to, now)
			if !tt.ok {
				require.ErrorIs(t, err, dispatch.ErrInvalidTransition)
				require.Equal(t, tt.from, j.Status)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.to, j.Status)
			if tt.to == dispatch.StatusPending || tt.to == dispatch.StatusQueued {
				require.Equal(t, blocked, j.BlockedBy)
			} else {
				require.Empty(t, j.BlockedBy, "leaving the line clears the hold")
			}
		})
	}
}
