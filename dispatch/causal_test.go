package dispatch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/stream"
)

// loaded returns the job as another process reads it from the store.
func loaded(j *Job) *Job {
	c := *j
	return &c
}

// TestStatusEventIDsFollowTheJobAcrossInstances moves one job through its
// life on two instances whose clocks disagree (B 50 ms behind A, then both
// in the same millisecond): the ids of its status events sort in the order
// of its changes all the same, as the stream needs.
func TestStatusEventIDsFollowTheJobAcrossInstances(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for _, skew := range []time.Duration{50 * time.Millisecond, 0} {
		t.Run(skew.String(), func(t *testing.T) {
			t.Parallel()
			clockA := base
			clockB := base.Add(-skew)
			a := idgen.New(func() time.Time { return clockA })
			b := idgen.New(func() time.Time { return clockB })

			j := &Job{ID: "job", Status: StatusPending, CreatedAt: base, UpdatedAt: base}
			var ids []string
			step := func(g *idgen.Generator, now time.Time, to Status, typ string) {
				require.NoError(t, j.Transition(to, now))
				ev := j.StatusEvent(g.New(), typ, now)
				ids = append(ids, ev.ID)
				j.Version++
				j = loaded(j) // the next change happens on another instance
			}
			// Created and queued by A: two events of one change.
			j.Version = 0
			require.NoError(t, j.Transition(StatusQueued, clockA))
			ids = append(ids, j.StatusEvent(a.New(), stream.TypeDispatchCreated, clockA).ID,
				j.StatusEvent(a.New(), stream.TypeDispatchQueued, clockA).ID)
			j.Version = 1
			j = loaded(j)
			step(b, clockB, StatusInProgress, stream.TypeDispatchStarted)
			step(a, clockA, StatusPending, stream.TypeDispatchPending)
			step(b, clockB, StatusQueued, stream.TypeDispatchQueued)
			step(a, clockA, StatusInProgress, stream.TypeDispatchStarted)
			step(b, clockB, StatusCompleted, stream.TypeDispatchCompleted)

			for i := 1; i < len(ids); i++ {
				require.Less(t, ids[i-1], ids[i], "event %d sorts before event %d: %v", i, i-1, ids)
			}
			require.False(t, j.UpdatedAt.Before(clockA), "UpdatedAt never goes back")
		})
	}
}

// TestStatusEventIDKeptWhenInOrder: on a single instance with a clock that
// moves on, ids are not touched and UpdatedAt stays the transition time.
func TestStatusEventIDKeptWhenInOrder(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	g := idgen.New(func() time.Time { return now })
	j := &Job{ID: "job", Status: StatusQueued, CreatedAt: now, UpdatedAt: now, Version: 1}
	now = now.Add(time.Second)
	require.NoError(t, j.Transition(StatusInProgress, now))
	id := g.New()
	require.Equal(t, id, j.StatusEvent(id, stream.TypeDispatchStarted, now).ID)
	require.Equal(t, now, j.UpdatedAt)
}
