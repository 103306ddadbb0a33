package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/store"
)

func testLifecycle(t *testing.T, newStore NewStoreFunc) {
	t.Helper()

	t.Run("Ping", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		require.NoError(t, b.store.Ping(b.ctx))
	})

	t.Run("Closed", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		b.insertJobs(t, b.newJob(nil))
		require.NoError(t, b.store.Close())

		require.ErrorIs(t, b.store.Ping(b.ctx), store.ErrClosed)
		_, err := b.store.JobGetByID(b.ctx, "x")
		require.ErrorIs(t, err, store.ErrClosed)
		require.ErrorIs(t, b.store.JobInsertMany(b.ctx, &dispatch.JobInsertManyParams{Jobs: []*dispatch.Job{b.newJob(nil)}}), store.ErrClosed)
		_, err = b.store.SubscriptionGeneration(b.ctx)
		require.ErrorIs(t, err, store.ErrClosed)
		require.NoError(t, b.store.Close(), "a second Close is harmless")
	})
}
