package dispatch_test

import (
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/clocktest"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/queue/memqueue"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/stream"
)

// An outcome Cancelled (a transformation called the delivery off, API.md
// §16) ends the claimed job CANCELLED with its reason in the
// dispatch.cancelled event: no attempt is counted or recorded, and the
// circuit is not touched; a Permanent failure (a transformation's error)
// ends the job in ERROR without counting toward the circuit either.
func TestRecordOutcomeCancelledAndPermanent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: filepath.Join(t.TempDir(), "h.db")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	clk := clocktest.New(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	q := memqueue.New(memqueue.Config{NowFunc: clk.Now})
	t.Cleanup(func() { _ = q.Close() })
	ids := idgen.New(clk.Now)
	lc := dispatch.NewLifecycle(dispatch.LifecycleConfig{
		Store: st, Queue: q, NewID: ids.New, NowFunc: clk.Now, Logger: slog.New(slog.DiscardHandler),
		Circuit: dispatch.CircuitPolicy{Store: st, Failures: 3, Cooldown: time.Minute},
	})
	claimed := func() *dispatch.Job {
		t.Helper()
		j := circuitTestJob(ids.New(), clk.Now())
		require.NoError(t, lc.Insert(ctx, []*dispatch.Job{j}))
		require.NoError(t, lc.Claim(ctx, j, dispatch.ClaimParams{Worker: "w", Lease: time.Minute}))
		return j
	}
	// One retryable failure, so that the circuit has a count to keep.
	_, err = lc.RecordOutcome(ctx, claimed(), dispatch.Outcome{
		Attempted: true, Err: errors.New("HTTP 503"), Attempt: dispatch.Attempt{StatusCode: 503},
	})
	require.NoError(t, err)

	const reason = "the transformation cancelled the delivery"
	j, err := lc.RecordOutcome(ctx, claimed(), dispatch.Outcome{Cancelled: reason})
	require.NoError(t, err)
	require.Equal(t, dispatch.StatusCancelled, j.Status)
	require.Zero(t, j.AttemptCount, "nothing was sent: no attempt counted")
	require.Empty(t, j.Attempts)
	events, err := st.StatusEventListBySubject(ctx, j.ID)
	require.NoError(t, err)
	require.NotEmpty(t, events)
	last := events[len(events)-1]
	require.Equal(t, stream.TypeDispatchCancelled, last.Type)
	require.Equal(t, reason, last.Data.Error)
	stored, err := lc.Get(ctx, j.ID)
	require.NoError(t, err)
	require.Equal(t, dispatch.StatusCancelled, stored.Status)

	const runErr = "transformation: line 3, column 5: boom"
	j, err = lc.RecordOutcome(ctx, claimed(), dispatch.Outcome{Attempted: true, Err: dispatch.Permanent(errors.New(runErr))})
	require.NoError(t, err)
	require.Equal(t, dispatch.StatusError, j.Status, "not retried")
	require.NotNil(t, j.LastError)
	require.Equal(t, runErr, *j.LastError)

	c, err := st.CircuitGet(ctx, "sub-1")
	require.NoError(t, err)
	require.Equal(t, 1, c.ConsecutiveFailures, "neither the cancel nor the permanent failure counts")
	require.Equal(t, dispatch.CircuitClosed, c.State)
}
