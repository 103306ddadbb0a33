package dispatch_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/queue/memqueue"
	"github.com/hooklane/hooklane/storage/mongostore"
	"github.com/hooklane/hooklane/storage/sqlitestore"
)

// The delivery side's store work per job, through the lifecycle verbs the
// router calls: the claim (one version-checked write with its
// dispatch.started event) and the outcome (one write with its
// dispatch.completed event). Each op's job is inserted with the timer
// stopped, so an op is exactly one delivery's writes (about 1 ms on the
// embedded store with synchronous=full: two commits, each an fsync).
//
//	go test -run '^$' -bench 'Lifecycle' -benchmem ./dispatch/
//
// The Mongo variants need HOOKLANE_TEST_MONGO_URI (skipped without it,
// unlike the tests: a benchmark run is chosen by hand).

func BenchmarkLifecycleClaimOutcomeSQLite(b *testing.B) {
	st, err := sqlitestore.Open(b.Context(), sqlitestore.Config{Path: filepath.Join(b.TempDir(), "jobs.db")})
	require.NoError(b, err)
	b.Cleanup(func() { _ = st.Close() })
	benchClaimOutcome(b, st)
}

func BenchmarkLifecycleClaimOutcomeMongo(b *testing.B) {
	uri := os.Getenv("HOOKLANE_TEST_MONGO_URI")
	if uri == "" {
		b.Skip("HOOKLANE_TEST_MONGO_URI is not set")
	}
	st, err := mongostore.Open(b.Context(), mongostore.Config{URI: uri, Database: "hlbench_dispatch_" + time.Now().Format("150405.000000")[7:]})
	require.NoError(b, err)
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = st.Drop(ctx)
		_ = st.Close()
	})
	benchClaimOutcome(b, st)
}

func benchClaimOutcome(b *testing.B, st dispatch.LifecycleStore) {
	b.Helper()
	q := memqueue.New(memqueue.Config{})
	b.Cleanup(func() { _ = q.Close() })
	ids := idgen.New(nil)
	lc := dispatch.NewLifecycle(dispatch.LifecycleConfig{Store: st, Queue: q, NewID: ids.New, Logger: slog.New(slog.DiscardHandler)})
	newJobs := func(n int) []*dispatch.Job {
		now := time.Now().UTC().Truncate(time.Millisecond)
		jobs := make([]*dispatch.Job, n)
		for i := range jobs {
			jobs[i] = dispatch.NewTaskJob(&dispatch.TaskSpec{
				ID: ids.New(), Code: "order.created", Payload: []byte(`{"n":1}`),
				Settings: dispatch.Settings{
					SubscriptionID: "sub", Subscription: "sub", Target: "http://127.0.0.1:9/hook",
					Mode: dispatch.ModeImmediate, Delivery: dispatch.DeliveryPush, MaxAgeSeconds: 3600,
					Retry: dispatch.Retry{MaxAttempts: 3, InitialBackoffSeconds: 1, MaxBackoffSeconds: 8},
				},
			}, now)
		}
		// Insert stores them QUEUED without sending them: the queue is no
		// part of the measure.
		require.NoError(b, lc.Insert(b.Context(), jobs))
		return jobs
	}
	ok := dispatch.Outcome{Attempted: true, Attempt: dispatch.Attempt{DurationMs: 3, StatusCode: 200}}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		j := newJobs(1)[0]
		b.StartTimer()
		require.NoError(b, lc.Claim(b.Context(), j, dispatch.ClaimParams{Worker: "bench", Lease: time.Minute}))
		_, err := lc.RecordOutcome(b.Context(), j, ok)
		require.NoError(b, err)
	}
}
