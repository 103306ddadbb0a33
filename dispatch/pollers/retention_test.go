package pollers

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/stream"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRetentionDeletesExpiredStatusEventsInBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: filepath.Join(t.TempDir(), "hooklane.db")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })

	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ids := idgen.New(func() time.Time { return now })
	var old, fresh []stream.Event
	for i := range 1100 {
		old = append(old, stream.Event{ID: ids.New(), Type: stream.TypeDispatchQueued, Time: now.Add(-2*time.Hour + time.Duration(i)*time.Millisecond), Subject: "job-old"})
	}
	for range 10 {
		fresh = append(fresh, stream.Event{ID: ids.New(), Type: stream.TypeDispatchQueued, Time: now.Add(-59 * time.Minute), Subject: "job-fresh"})
	}
	require.NoError(t, st.StatusEventInsertMany(ctx, append(old, fresh...)))

	r := NewRetention(RetentionConfig{Store: st, BatchSize: 500, NowFunc: func() time.Time { return now }})
	for _, wantMore := range []bool{true, true, false} {
		more, err := r.runOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, wantMore, more, "a full batch asks for another round at once")
	}
	gone, err := st.StatusEventListBySubject(ctx, "job-old")
	require.NoError(t, err)
	require.Empty(t, gone, "older than the default 1 h window")
	kept, err := st.StatusEventListBySubject(ctx, "job-fresh")
	require.NoError(t, err)
	require.Len(t, kept, 10, "inside the window")
}

func TestRetentionRunStopsWithContext(t *testing.T) {
	t.Parallel()
	deleted := make(chan time.Time, 1)
	r := NewRetention(RetentionConfig{Store: deleterFunc(func(before time.Time) {
		select {
		case deleted <- before:
		default:
		}
	}), Retention: 10 * time.Minute, NowFunc: func() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	require.Equal(t, time.Date(2026, 3, 1, 11, 50, 0, 0, time.UTC), <-deleted, "the first round runs at once")
	cancel()
	require.NoError(t, <-done)
}

type deleterFunc func(before time.Time)

func (f deleterFunc) StatusEventDeleteBefore(_ context.Context, before time.Time, _ int) (int, error) {
	f(before)
	return 0, nil
}
