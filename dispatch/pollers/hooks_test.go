package pollers_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/pollers"
	"github.com/hooklane/hooklane/event"
)

// countingJobs stands in for the lifecycle: each rescue reports the moves
// it is told to, once. The moves themselves are tested in package
// dispatch; this tests the hooks.
type countingJobs struct{ stale, expired int }

func (j *countingJobs) QueueDue(context.Context, dispatch.QueueDueParams) (int, int, error) {
	return 0, 0, nil
}

func (j *countingJobs) RescueStale(context.Context, dispatch.RescueParams) (int, int, error) {
	n := j.stale
	j.stale = 0
	return n, n, nil
}

func (j *countingJobs) RescueExpired(context.Context, dispatch.RescueParams) (int, int, error) {
	n := j.expired
	j.expired = 0
	return n, n, nil
}

func TestRescuerReportsMoves(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 24, 14, 0, 0, 0, time.UTC)
	got := map[string]int{}
	r := pollers.NewRescuer(pollers.RescuerConfig{
		Jobs: &countingJobs{stale: 2, expired: 1}, NowFunc: func() time.Time { return now },
		OnRescueFunc: func(check string, moved int) { got[check] += moved },
	})
	n, err := r.RescueStale(t.Context(), time.Minute)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	n, err = r.RescueExpired(t.Context(), now)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = r.RescueExpired(t.Context(), now) // nothing left: no report
	require.NoError(t, err)
	require.Equal(t, map[string]int{pollers.RescueStaleQueued: 2, pollers.RescueExpiredLease: 1}, got)
}

type oneEventStore struct{ events []*event.Event }

func (s *oneEventStore) EventListNotFannedOut(context.Context, *event.ListNotFannedOutParams) ([]*event.Event, error) {
	out := s.events
	s.events = nil
	return out, nil
}

type fanOuterFunc func(ctx context.Context, ev *event.Event) (int, error)

func (f fanOuterFunc) FanOut(ctx context.Context, ev *event.Event) (int, error) {
	return f(ctx, ev)
}

func TestFanOutReportsJobs(t *testing.T) {
	t.Parallel()
	st := &oneEventStore{events: []*event.Event{{ID: "A"}, {ID: "B"}}}
	var reported []int
	f := pollers.NewFanOut(pollers.FanOutConfig{
		Store: st,
		FanOuter: fanOuterFunc(func(_ context.Context, ev *event.Event) (int, error) {
			return map[string]int{"A": 2, "B": 3}[ev.ID], nil
		}),
		OnFanOutFunc: func(jobs int) { reported = append(reported, jobs) },
	})
	n, err := f.RunOnce(t.Context(), time.Now())
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, []int{2, 3}, reported)
}
