package health_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hooklane/hooklane/dispatch/health"
	"github.com/hooklane/hooklane/storage/sqlitestore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// hist returns a histogram with counts[i] latencies in bucket i.
func hist(counts map[int]int64) []int64 {
	h := make([]int64, health.Buckets())
	for i, n := range counts {
		h[i] = n
	}
	return h
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	// Bounds: 1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100, ...; index 11 is
	// (70, 100], index 12 is (100, 150].
	tests := []struct {
		name string
		hist []int64
		q    float64
		want int64
	}{
		{"empty", hist(nil), 0.5, 0},
		{"one bucket, median interpolated", hist(map[int]int64{11: 10}), 0.5, 85},
		{"one bucket, top", hist(map[int]int64{11: 10}), 1, 100},
		{"p95 in the upper bucket", hist(map[int]int64{11: 90, 12: 10}), 0.95, 125},
		{"p50 in the lower bucket", hist(map[int]int64{11: 90, 12: 10}), 0.5, 87},
		{"first bucket starts at 0", hist(map[int]int64{0: 4}), 0.5, 1},
		{"above the last bound", hist(map[int]int64{30: 3}), 0.99, 300000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, health.Percentile(tt.hist, tt.q))
		})
	}
}

func TestSummarizeWindows(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 30, 20, 0, time.UTC)
	minute := now.Truncate(time.Minute)
	b := func(ago time.Duration, ok, failed int64, lat map[int]int64) health.Bucket {
		answered := int64(0)
		for _, n := range lat {
			answered += n
		}
		return health.Bucket{Start: minute.Add(-ago), Attempts: ok + failed, Succeeded: ok, Failed: failed, Answered: answered, Latency: hist(lat)}
	}
	buckets := []health.Bucket{
		b(0, 8, 2, map[int]int64{11: 10}),
		b(59*time.Minute, 10, 0, map[int]int64{11: 10}), // the oldest minute of 1h
		b(60*time.Minute, 0, 5, nil),                    // only in 24h: failures without an answer
		b(23*time.Hour+59*time.Minute, 5, 0, map[int]int64{12: 5}),
		b(24*time.Hour, 100, 0, map[int]int64{12: 100}), // too old for either
	}
	got := health.Summarize(buckets, now)
	require.Len(t, got, 2)
	hour, day := got[0], got[1]
	require.Equal(t, "1h", hour.Window)
	require.Equal(t, []int64{20, 18, 2}, []int64{hour.Attempts, hour.Succeeded, hour.Failed})
	require.InDelta(t, 0.9, *hour.SuccessRate, 1e-9)
	require.Equal(t, &health.Percentiles{P50: 85, P95: 99, P99: 100}, hour.LatencyMs)
	require.Equal(t, "24h", day.Window)
	require.Equal(t, []int64{30, 23, 7}, []int64{day.Attempts, day.Succeeded, day.Failed})
	require.InDelta(t, 23.0/30, *day.SuccessRate, 1e-9)
	require.Equal(t, int64(148), day.LatencyMs.P99, "the slow minute 23h59 ago counts in 24h: rank 24.75 of 25, in (100, 150]")

	empty := health.Summarize(nil, now)
	require.Nil(t, empty[0].SuccessRate, "no attempt: no rate")
	require.Nil(t, empty[0].LatencyMs)
	failedOnly := health.Summarize([]health.Bucket{b(0, 0, 3, nil)}, now)
	require.InDelta(t, 0.0, *failedOnly[0].SuccessRate, 1e-9)
	require.Nil(t, failedOnly[0].LatencyMs, "no answer: no latency")
}

func TestRecorderFlushesSumsThatAddUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: filepath.Join(t.TempDir(), "h.db")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	r := health.NewRecorder(health.RecorderConfig{Store: st, FlushInterval: time.Hour})
	at := time.Date(2026, 3, 1, 12, 0, 10, 0, time.UTC)
	r.Observe(health.Observation{SubscriptionID: "s1", At: at, OK: true, Answered: true, Latency: 80 * time.Millisecond})
	r.Observe(health.Observation{SubscriptionID: "s1", At: at.Add(time.Second), Answered: true, Latency: 2 * time.Second, Error: "HTTP 503"})
	r.Observe(health.Observation{SubscriptionID: "s1", At: at.Add(2 * time.Second), Error: "connection refused"})
	r.Observe(health.Observation{SubscriptionID: "s1", At: at.Add(time.Minute), OK: true, Answered: true, Latency: time.Millisecond})
	require.NoError(t, r.Flush(ctx))
	// A second flush with nothing new writes nothing; a later one adds up.
	require.NoError(t, r.Flush(ctx))
	r.Observe(health.Observation{SubscriptionID: "s1", At: at.Add(3 * time.Second), OK: true, Answered: true, Latency: 90 * time.Millisecond})
	require.NoError(t, r.Flush(ctx))

	last, buckets, err := st.HealthGet(ctx, "s1", at.Add(-time.Hour))
	require.NoError(t, err)
	require.Equal(t, at.Add(time.Minute), *last.LastSuccessAt)
	require.Equal(t, at.Add(2*time.Second), *last.LastFailureAt)
	require.Equal(t, "connection refused", last.LastError)
	require.Len(t, buckets, 2)
	first := buckets[0]
	require.Equal(t, at.Truncate(time.Minute), first.Start)
	require.Equal(t, []int64{4, 2, 2, 3}, []int64{first.Attempts, first.Succeeded, first.Failed, first.Answered})
	require.Equal(t, int64(2), first.Latency[11], "80 ms and 90 ms fall in (70, 100]")
	require.Equal(t, int64(1), first.Latency[19], "2 s falls in (1500, 2000]")
	require.Equal(t, int64(1), buckets[1].Attempts)
}

func TestRecorderRunFlushesOnStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: filepath.Join(t.TempDir(), "h.db")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	r := health.NewRecorder(health.RecorderConfig{Store: st, FlushInterval: time.Hour})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- r.Run(runCtx) }()
	at := time.Now().UTC()
	r.Observe(health.Observation{SubscriptionID: "s1", At: at, OK: true})
	cancel()
	require.NoError(t, <-done)
	_, buckets, err := st.HealthGet(ctx, "s1", at.Add(-time.Minute))
	require.NoError(t, err)
	require.Len(t, buckets, 1, "the sums observed before the stop are written")
}
