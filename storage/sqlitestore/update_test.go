package sqlitestore_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/store"
)

// TestJobUpdateOfIndexedColumns: JobUpdate first tries an UPDATE of the
// columns a lifecycle changes; a job whose indexed identity columns changed
// too (group, subscription, event, code, creation) must still be written
// whole, and found by those indexes afterwards.
func TestJobUpdateOfIndexedColumns(t *testing.T) {
	t.Parallel()
	s := openStore(t, filepath.Join(t.TempDir(), "hooklane.db"))
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	ctx := t.Context()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	job := func(id string) *dispatch.Job {
		return &dispatch.Job{
			ID: id, Kind: dispatch.KindEvent, Code: "order.created", EventID: "ev-" + id,
			SubscriptionID: "sub-1", Subscription: "orders", TargetURL: "http://127.0.0.1:9/hook", Mode: dispatch.ModeImmediate,
			Delivery: dispatch.DeliveryPush, MessageGroup: "g-1", TimeoutSeconds: 30, MaxAgeSeconds: 86400,
			Retry: dispatch.Retry{}.WithDefaults(), Status: dispatch.StatusQueued, MaxAttempts: 8, CreatedAt: now, UpdatedAt: now,
		}
	}
	a, b := job("job-a"), job("job-b")
	require.NoError(t, s.JobInsertMany(ctx, &dispatch.JobInsertManyParams{Jobs: []*dispatch.Job{a, b}}))

	// A lifecycle step (the narrow UPDATE).
	require.NoError(t, a.Transition(dispatch.StatusInProgress, now.Add(time.Second)))
	lease := now.Add(time.Minute)
	a.LeaseExpiresAt, a.Worker = &lease, "w1"
	require.NoError(t, s.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: a}))
	require.Equal(t, int64(2), a.Version)
	got, err := s.JobGetByID(ctx, a.ID)
	require.NoError(t, err)
	require.Equal(t, dispatch.StatusInProgress, got.Status)
	require.Equal(t, "w1", got.Worker)
	require.Equal(t, int64(2), got.Version)
	due, err := s.JobListDue(ctx, &dispatch.JobListDueParams{Status: dispatch.StatusQueued, Now: now.Add(time.Hour), Limit: 10})
	require.NoError(t, err)
	require.Len(t, due, 1, "the status index follows the narrow update")
	require.Equal(t, b.ID, due[0].ID)

	// Identity columns changed too (the full UPDATE).
	b.MessageGroup, b.SubscriptionID, b.Subscription, b.Code = "g-2", "sub-2", "billing", "order.paid"
	b.CreatedAt = now.Add(-time.Hour)
	require.NoError(t, s.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: b}))
	require.Equal(t, int64(2), b.Version)
	got, err = s.JobGetByID(ctx, b.ID)
	require.NoError(t, err)
	require.Equal(t, "g-2", got.MessageGroup)
	require.Equal(t, "billing", got.Subscription)
	require.Equal(t, "order.paid", got.Code)
	require.True(t, got.CreatedAt.Equal(now.Add(-time.Hour)))
	group, err := s.JobListGroup(ctx, &dispatch.JobListGroupParams{SubscriptionID: "sub-2", MessageGroup: "g-2", Limit: 10})
	require.NoError(t, err)
	require.Len(t, group, 1, "the group index holds the new group")
	require.Equal(t, b.ID, group[0].ID)
	old, err := s.JobListGroup(ctx, &dispatch.JobListGroupParams{SubscriptionID: "sub-1", MessageGroup: "g-1", Limit: 10})
	require.NoError(t, err)
	require.Len(t, old, 1, "only job-a is left in the old group")

	// A stale version still conflicts, on either path, and writes nothing.
	stale := *a
	stale.Version = 1
	require.ErrorIs(t, s.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: &stale}), store.ErrConflict)
	stale.MessageGroup = "g-9"
	require.ErrorIs(t, s.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: &stale}), store.ErrConflict)
	got, err = s.JobGetByID(ctx, a.ID)
	require.NoError(t, err)
	require.Equal(t, "g-1", got.MessageGroup)
	require.Equal(t, int64(2), got.Version)
	missing := job("job-missing")
	require.ErrorIs(t, s.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: missing}), store.ErrNotFound)
}
