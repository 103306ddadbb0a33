package dispatch_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/stream"
)

// The final checks of TestLifecycleRandomized.

// check runs the final checks on every job of the run.
func (w *world) check(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	statuses := map[dispatch.Status]int{}
	claims := 0
	for _, created := range w.created() {
		j, err := w.st.JobGetByID(ctx, created.ID)
		require.NoError(t, err, "job %s is lost", created.ID)
		statuses[j.Status]++
		claims += len(w.rec.claims[j.ID])
		require.True(t, j.Status.Valid(), "job %s: status %q", j.ID, j.Status)
		events, err := w.st.StatusEventListBySubject(ctx, j.ID)
		require.NoError(t, err)
		starts := checkWalk(t, j, events)

		claims := w.rec.claims[j.ID]
		require.Len(t, claims, starts, "job %s: every successful claim, and only those, emitted dispatch.started", j.ID)
		requireDistinct(t, j, "claims", claims)
		requireDistinct(t, j, "writes", w.rec.writes[j.ID])
		for _, v := range w.rec.writes[j.ID] {
			require.LessOrEqual(t, v, j.Version, "job %s: a write reported version %d, the job is at %d", j.ID, v, j.Version)
		}
		if w.rec.completed[j.ID] {
			require.Equal(t, dispatch.StatusCompleted, j.Status, "job %s was seen COMPLETED", j.ID)
		}
		if j.Delivery != dispatch.DeliveryPull {
			checkAttemptNumbers(t, j)
		}
	}
	t.Logf("%d jobs, %d claims; at the end %v", len(w.created()), claims, statuses)
}

// checkWalk checks that the status events of j are a legal walk of the
// machine ending in j's status, and returns how many claims it holds.
func checkWalk(t *testing.T, j *dispatch.Job, events []stream.Event) int {
	t.Helper()
	require.NotEmpty(t, events, "job %s has no status event", j.ID)
	trail := func() string {
		var s strings.Builder
		for _, e := range events {
			fmt.Fprintf(&s, "\n  %s %s %s", e.ID, e.Type, e.Data.Status)
		}
		return s.String()
	}
	require.Equal(t, stream.TypeDispatchCreated, events[0].Type, "job %s: first event%s", j.ID, trail())
	at := dispatch.Status(events[0].Data.Status)
	rest := events[1:]
	if at == dispatch.StatusQueued {
		// Created QUEUED: dispatch.created and dispatch.queued of one write.
		require.NotEmpty(t, rest)
		require.Equal(t, stream.TypeDispatchQueued, rest[0].Type, "job %s%s", j.ID, trail())
		rest = rest[1:]
	}
	starts := 0
	for i := range rest {
		e := rest[i]
		to := dispatch.Status(e.Data.Status)
		if e.Type == stream.TypeDispatchFailed && to == dispatch.StatusInProgress {
			// The failed attempt of a discard: the discard follows in the
			// same write.
			require.Less(t, i+1, len(rest), "job %s: a failure of a claim that leads nowhere%s", j.ID, trail())
			require.Equal(t, stream.TypeDispatchDiscarded, rest[i+1].Type, "job %s%s", j.ID, trail())
			continue
		}
		require.Equal(t, wantStatus(e.Type, to), to, "job %s: event %s carries status %s%s", j.ID, e.Type, to, trail())
		if at == dispatch.StatusQueued && to == dispatch.StatusQueued && e.Type == stream.TypeDispatchQueued {
			// A lost group head sent to the queue again under a new
			// version (Lifecycle.HoldForOrder): it stays QUEUED, and only
			// that re-send may say so.
			require.Contains(t, e.Data.Error, "lost head", "job %s: QUEUED again without being a lost head%s", j.ID, trail())
			continue
		}
		require.True(t, dispatch.CanTransition(at, to), "job %s: illegal move %s → %s (%s)%s", j.ID, at, to, e.Type, trail())
		if e.Type == stream.TypeDispatchStarted {
			require.Equal(t, dispatch.StatusQueued, at, "job %s: claimed from %s%s", j.ID, at, trail())
			starts++
		}
		at = to
	}
	require.Equal(t, j.Status, at, "job %s: the events end in %s, the job is %s%s", j.ID, at, j.Status, trail())
	return starts
}

// wantStatus returns the status an event of type typ must carry (got, for
// a failure, which may leave the job PENDING).
func wantStatus(typ string, got dispatch.Status) dispatch.Status {
	switch typ {
	case stream.TypeDispatchQueued:
		return dispatch.StatusQueued
	case stream.TypeDispatchStarted:
		return dispatch.StatusInProgress
	case stream.TypeDispatchCompleted:
		return dispatch.StatusCompleted
	case stream.TypeDispatchDiscarded:
		return dispatch.StatusError
	case stream.TypeDispatchCancelled:
		return dispatch.StatusCancelled
	case stream.TypeDispatchPending, stream.TypeDispatchBlocked, stream.TypeDispatchFailed:
		return dispatch.StatusPending
	}
	return got
}

func requireDistinct(t *testing.T, j *dispatch.Job, what string, versions []int64) {
	t.Helper()
	seen := map[int64]bool{}
	for _, v := range versions {
		require.False(t, seen[v], "job %s: two %s produced version %d: %v", j.ID, what, v, versions)
		seen[v] = true
	}
}

// checkAttemptNumbers checks that a push job's attempts are numbered
// 1…AttemptCount (AttemptCount − 1 while a claim's attempt runs).
func checkAttemptNumbers(t *testing.T, j *dispatch.Job) {
	t.Helper()
	want := j.AttemptCount
	if j.Status == dispatch.StatusInProgress {
		want--
	}
	nums := make([]int, len(j.Attempts))
	for i, a := range j.Attempts {
		nums[i] = a.Attempt
	}
	require.Len(t, j.Attempts, want, "job %s (%s, attemptCount %d): attempts %v", j.ID, j.Status, j.AttemptCount, nums)
	for i, n := range nums {
		require.Equal(t, i+1, n, "job %s: attempts %v", j.ID, nums)
	}
}
