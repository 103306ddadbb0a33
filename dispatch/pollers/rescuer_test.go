package pollers

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/queue/memqueue"
)

// TestRescuersOnSeveralInstancesMoveEachJobOnce runs the checks of three
// rescuers (three instances) at once on one real store: every lost job is
// moved exactly once, thanks to the version-checked writes, and batches
// smaller than the backlog drain it.
func TestRescuersOnSeveralInstancesMoveEachJobOnce(t *testing.T) {
	t.Parallel()
	f := newCleanupFixture(t)
	const stale, claimed = 40, 25
	var ids []string
	for range stale {
		_, j := f.ingest(time.Hour, dispatch.StatusQueued, time.Hour)
		ids = append(ids, j.ID)
	}
	for range claimed {
		_, j := f.ingest(time.Hour, dispatch.StatusQueued, time.Hour)
		j.Status, j.Worker, j.AttemptCount = dispatch.StatusInProgress, "dead-worker", 1
		expired := f.now.Add(-time.Minute)
		j.LeaseExpiresAt = &expired
		require.NoError(t, f.st.JobUpdate(f.ctx, &dispatch.JobUpdateParams{Job: j}))
		ids = append(ids, j.ID)
	}

	var mu sync.Mutex
	moved := map[string]int{}
	var errs []error
	var wg sync.WaitGroup
	for range 3 {
		clock := func() time.Time { return f.now }
		jobs := dispatch.NewLifecycle(dispatch.LifecycleConfig{
			Store: f.st, Queue: memqueue.New(memqueue.Config{}),
			NewID: idgen.New(clock).New, NowFunc: clock,
		})
		r := NewRescuer(RescuerConfig{
			Jobs: jobs, BatchSize: 7, StaleQueuedAfter: 15 * time.Minute, NowFunc: clock,
			OnRescueFunc: func(check string, n int) {
				mu.Lock()
				moved[check] += n
				mu.Unlock()
			},
		})
		wg.Go(func() {
			// What Run does, without its ticker: rounds until a round
			// moves nothing.
			for {
				n, _, err := r.rescueStale(f.ctx, 15*time.Minute)
				m, _, err2 := r.rescueExpired(f.ctx, f.now)
				if err := errors.Join(err, err2); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				if n+m == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.Equal(t, map[string]int{RescueStaleQueued: stale, RescueExpiredLease: claimed}, moved)
	for i, id := range ids {
		j, err := f.st.JobGetByID(f.ctx, id)
		require.NoError(t, err)
		require.Equal(t, dispatch.StatusPending, j.Status)
		if i >= stale {
			require.Len(t, j.Attempts, 1, "the lost attempt is recorded once")
			require.Equal(t, dispatch.ActionAbandoned, j.Attempts[0].Action)
			require.Equal(t, int64(3), j.Version, "claimed, then rescued once")
		} else {
			require.Equal(t, int64(2), j.Version, "rescued once")
		}
	}
}

// failingFanOuter fails the events it is told to.
type failingFanOuter struct{ fail map[string]bool }

func (f failingFanOuter) FanOut(_ context.Context, ev *event.Event) (int, error) {
	if f.fail[ev.ID] {
		return 0, errors.New("boom")
	}
	return 1, nil
}

type staticEvents []*event.Event

func (s staticEvents) EventListNotFannedOut(context.Context, *event.ListNotFannedOutParams) ([]*event.Event, error) {
	return s, nil
}

func TestFanOutGoesOnPastAFailingEvent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		fail     map[string]bool
		batch    int
		wantDone int
		wantMore bool
		wantErr  string
	}{
		{name: "all fanned out, batch full", batch: 3, wantDone: 3, wantMore: true},
		{name: "all fanned out, batch not full", batch: 10, wantDone: 3},
		{name: "one fails, the others go on", fail: map[string]bool{"B": true}, batch: 3, wantDone: 2, wantErr: "fan out event B: boom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := NewFanOut(FanOutConfig{Store: staticEvents{{ID: "A"}, {ID: "B"}, {ID: "C"}}, FanOuter: failingFanOuter{fail: tc.fail}, BatchSize: tc.batch})
			done, more, err := f.runOnce(t.Context(), time.Now())
			require.Equal(t, tc.wantDone, done)
			require.Equal(t, tc.wantMore, more, "a round with a failure never asks for another at once")
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}
