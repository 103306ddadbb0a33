package dispatch_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/queue"
	"github.com/hooklane/hooklane/queue/memqueue"
	"github.com/hooklane/hooklane/storage/sqlitestore"
)

type releaseEnv struct {
	st  *sqlitestore.Store
	q   *memqueue.Queue
	ids *idgen.Generator
	rel *dispatch.Lifecycle
}

func newReleaseEnv(t *testing.T) *releaseEnv {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Config{Path: filepath.Join(t.TempDir(), "r.db")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	q := memqueue.New(memqueue.Config{})
	t.Cleanup(func() { require.NoError(t, q.Close()) })
	ids := idgen.New(nil)
	lc := dispatch.NewLifecycle(dispatch.LifecycleConfig{Store: st, Queue: q, NewID: ids.New, Logger: slog.New(slog.DiscardHandler)})
	return &releaseEnv{st: st, q: q, ids: ids, rel: lc}
}

func (e *releaseEnv) job(t *testing.T, sub, group string, st dispatch.Status, blockedBy string) *dispatch.Job {
	t.Helper()
	now := time.Now().UTC()
	far := now.Add(time.Hour)
	j := &dispatch.Job{
		ID: e.ids.New(), Kind: dispatch.KindTask, Code: "t", SubscriptionID: sub, TargetURL: "http://x.example/",
		Mode: dispatch.ModeBlockOnError, Delivery: dispatch.DeliveryPush, MessageGroup: group, Status: st, BlockedBy: blockedBy,
		MaxAttempts: 3, Attempts: []dispatch.Attempt{}, CreatedAt: now, UpdatedAt: now, Version: 1,
	}
	if st == dispatch.StatusPending {
		j.NextAttemptAt = &far
	}
	require.NoError(t, e.st.JobInsertMany(context.Background(), &dispatch.JobInsertManyParams{Jobs: []*dispatch.Job{j}}))
	return j
}

func (e *releaseEnv) received(t *testing.T) []string {
	t.Helper()
	var ids []string
	for {
		msgs, err := e.q.Receive(context.Background(), queue.ReceiveParams{Max: queue.MaxBatch})
		require.NoError(t, err)
		if len(msgs) == 0 {
			return ids
		}
		for _, m := range msgs {
			ids = append(ids, messageJobID(t, m.Body))
			require.NoError(t, e.q.Delete(context.Background(), m.ReceiptHandle))
		}
	}
}

func TestReleaseGroup(t *testing.T) {
	t.Parallel()
	e := newReleaseEnv(t)
	ctx := context.Background()
	head := e.job(t, "s1", "g", dispatch.StatusError, "")
	held := e.job(t, "s1", "g", dispatch.StatusPending, head.ID)
	next := e.job(t, "s1", "g", dispatch.StatusPending, head.ID)

	ok, err := e.rel.ReleaseGroup(ctx, "s1", "g")
	require.NoError(t, err)
	require.False(t, ok, "an ERROR head keeps holding the group")

	head.Status = dispatch.StatusCancelled
	require.NoError(t, e.st.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: head}))
	ok, err = e.rel.ReleaseGroup(ctx, "s1", "g")
	require.NoError(t, err)
	require.True(t, ok)
	for _, id := range []string{held.ID, next.ID} {
		got, err := e.st.JobGetByID(ctx, id)
		require.NoError(t, err)
		require.Equal(t, dispatch.StatusQueued, got.Status)
		require.Empty(t, got.BlockedBy)
	}
	// The queue hands the group out one at a time, in order.
	msgs, err := e.q.Receive(ctx, queue.ReceiveParams{Max: queue.MaxBatch})
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.Equal(t, held.ID, messageJobID(t, msgs[0].Body))
	require.NoError(t, e.q.Delete(ctx, msgs[0].ReceiptHandle))
	require.Equal(t, []string{next.ID}, e.received(t))

	ok, err = e.rel.ReleaseGroup(ctx, "s1", "g")
	require.NoError(t, err)
	require.False(t, ok, "the head is QUEUED: nothing more to release")
}

// TestReleaseGroupStopsAtRetryingJob: the run ends at a job that is not
// held (here retrying on its own schedule): later parked jobs stay parked.
func TestReleaseGroupStopsAtRetryingJob(t *testing.T) {
	t.Parallel()
	e := newReleaseEnv(t)
	ctx := context.Background()
	first := e.job(t, "s1", "g", dispatch.StatusPending, "01GONE")
	retrying := e.job(t, "s1", "g", dispatch.StatusPending, "")
	later := e.job(t, "s1", "g", dispatch.StatusPending, first.ID)
	ok, err := e.rel.ReleaseGroup(ctx, "s1", "g")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []string{first.ID}, e.received(t))
	for _, id := range []string{retrying.ID, later.ID} {
		got, err := e.st.JobGetByID(ctx, id)
		require.NoError(t, err)
		require.Equal(t, dispatch.StatusPending, got.Status)
	}
}

func TestReleaseSubscription(t *testing.T) {
	t.Parallel()
	e := newReleaseEnv(t)
	ctx := context.Background()
	var parked []string
	for _, g := range []string{"a", "b", "a"} {
		parked = append(parked, e.job(t, "s1", g, dispatch.StatusPending, dispatch.BlockedByPaused).ID)
	}
	retrying := e.job(t, "s1", "c", dispatch.StatusPending, "")
	other := e.job(t, "s2", "a", dispatch.StatusPending, dispatch.BlockedByPaused)

	n, err := e.rel.ReleaseSubscription(ctx, "s1")
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, parked, e.received(t), "released in ingest order")
	for _, id := range []string{retrying.ID, other.ID} {
		got, err := e.st.JobGetByID(ctx, id)
		require.NoError(t, err)
		require.Equal(t, dispatch.StatusPending, got.Status, "a retry wait or another subscription's job is left alone")
	}
}
