package dispatch_test

import (
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/queue/memqueue"
)

// When a pool's deliveries to a failing endpoint end together, every one of
// their failures is counted into the circuit: none is lost to a write
// conflict with the others. A lost count opens the circuit late, and more
// requests reach an endpoint that is down (CI saw 113 where at most 80
// were due). Runs on both stores.
func TestConcurrentFailuresAreEachCounted(t *testing.T) {
	t.Parallel()
	const n = 64 // the default pool's concurrency
	for _, kind := range storeKinds() {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			st := kind.open(t)
			circuits, ok := st.(dispatch.CircuitStore)
			require.True(t, ok, "%s store keeps circuits", kind.name)
			q := memqueue.New(memqueue.Config{})
			t.Cleanup(func() { _ = q.Close() })
			ids := idgen.New(time.Now)
			lc := dispatch.NewLifecycle(dispatch.LifecycleConfig{
				Store: st, Queue: q, NewID: ids.New, Logger: slog.New(slog.DiscardHandler),
				Circuit: dispatch.CircuitPolicy{Store: circuits, Failures: 10 * n, Cooldown: time.Minute},
			})
			jobs := make([]*dispatch.Job, n)
			for i := range jobs {
				jobs[i] = circuitTestJob(ids.New(), time.Now())
			}
			require.NoError(t, lc.Insert(ctx, jobs))
			for _, j := range jobs {
				held, err := lc.HoldForCircuit(ctx, j, time.Minute)
				require.NoError(t, err)
				require.False(t, held)
				require.NoError(t, lc.Claim(ctx, j, dispatch.ClaimParams{Worker: "w", Lease: time.Minute}))
			}

			start := make(chan struct{})
			var wg sync.WaitGroup
			for _, j := range jobs {
				wg.Go(func() {
					<-start
					_, err := lc.RecordOutcome(ctx, j, dispatch.Outcome{
						Attempted: true, Err: errors.New("HTTP 503"), Attempt: dispatch.Attempt{StatusCode: 503},
					})
					require.NoError(t, err)
				})
			}
			close(start)
			wg.Wait()

			c, err := circuits.CircuitGet(ctx, "sub-1")
			require.NoError(t, err)
			require.Equal(t, n, c.ConsecutiveFailures, "every concurrent failure counted once")
		})
	}
}
