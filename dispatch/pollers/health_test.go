package pollers

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch/health"
	"github.com/hooklane/hooklane/storage/sqlitestore"
)

func TestHealthRetentionKeepsTheWindows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: filepath.Join(t.TempDir(), "hooklane.db")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var buckets []health.Bucket
	for i := range 30 { // one minute a bucket, 30 minutes before the 24 h window
		buckets = append(buckets, health.Bucket{
			SubscriptionID: "s1", Start: now.Add(-25*time.Hour - time.Duration(i)*time.Minute),
			Attempts: 1, Succeeded: 1, Latency: make([]int64, health.Buckets()),
		})
	}
	buckets = append(buckets, health.Bucket{
		SubscriptionID: "s1", Start: now.Add(-23 * time.Hour), Attempts: 2, Succeeded: 2,
		Latency: make([]int64, health.Buckets()),
	})
	old := now.Add(-40 * 24 * time.Hour)
	require.NoError(t, st.HealthRecord(ctx, &health.RecordParams{Buckets: buckets, Lasts: []health.Last{
		{SubscriptionID: "gone", LastSuccessAt: &old}, {SubscriptionID: "s1", LastSuccessAt: &now},
	}}))

	r := NewHealthRetention(HealthRetentionConfig{Store: st, BatchSize: 20, NowFunc: func() time.Time { return now }})
	for _, wantMore := range []bool{true, false} {
		more, err := r.runOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, wantMore, more)
	}
	last, kept, err := st.HealthGet(ctx, "s1", now.Add(-48*time.Hour))
	require.NoError(t, err)
	require.Len(t, kept, 1, "only the bucket inside the 24 h window is kept")
	require.NotNil(t, last)
	gone, _, err := st.HealthGet(ctx, "gone", now.Add(-48*time.Hour))
	require.NoError(t, err)
	require.Nil(t, gone, "a subscription silent for 40 days loses its last success")
}
