package pollers_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/eventlog"
	"github.com/hooklane/hooklane/pollers"
)

// listStore hands out the given jobs once per status and accepts every
// update.
type listStore struct {
	jobs    map[dispatch.Status][]*dispatch.Job
	updated int
}

func (s *listStore) JobListDue(_ context.Context, p *dispatch.JobListDueParams) ([]*dispatch.Job, error) {
	out := s.jobs[p.Status]
	delete(s.jobs, p.Status)
	return out, nil
}

func (s *listStore) JobUpdate(context.Context, *dispatch.JobUpdateParams) error {
	s.updated++
	return nil
}

func TestRescuerReportsMoves(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 24, 14, 0, 0, 0, time.UTC)
	job := func(status dispatch.Status) *dispatch.Job {
		return &dispatch.Job{ID: "J" + string(status), Kind: dispatch.KindEvent, Status: status, Delivery: dispatch.DeliveryPush,
			AttemptCount: 1, MaxAttempts: 8, CreatedAt: now.Add(-time.Hour), UpdatedAt: now.Add(-time.Hour), Version: 1}
	}
	st := &listStore{jobs: map[dispatch.Status][]*dispatch.Job{
		dispatch.StatusQueued:     {job(dispatch.StatusQueued), job(dispatch.StatusQueued)},
		dispatch.StatusInProgress: {job(dispatch.StatusInProgress)},
	}}
	got := map[string]int{}
	r := pollers.NewRescuer(pollers.RescuerConfig{
		Store: st, NewID: func() string { return "E" }, NowFunc: func() time.Time { return now },
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

type oneEventStore struct{ events []*eventlog.Event }

func (s *oneEventStore) EventListNotFannedOut(context.Context, *eventlog.ListNotFannedOutParams) ([]*eventlog.Event, error) {
	out := s.events
	s.events = nil
	return out, nil
}

type fanOuterFunc func(ctx context.Context, ev *eventlog.Event) (int, error)

func (f fanOuterFunc) FanOut(ctx context.Context, ev *eventlog.Event) (int, error) {
	return f(ctx, ev)
}

func TestFanOutReportsJobs(t *testing.T) {
	t.Parallel()
	st := &oneEventStore{events: []*eventlog.Event{{ID: "A"}, {ID: "B"}}}
	var reported []int
	f := pollers.NewFanOut(pollers.FanOutConfig{
		Store: st,
		FanOuter: fanOuterFunc(func(_ context.Context, ev *eventlog.Event) (int, error) {
			return map[string]int{"A": 2, "B": 3}[ev.ID], nil
		}),
		OnFanOutFunc: func(jobs int) { reported = append(reported, jobs) },
	})
	n, err := f.RunOnce(t.Context(), time.Now())
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, []int{2, 3}, reported)
}
