package dispatch_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/clocktest"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/queue/memqueue"
	"github.com/hooklane/hooklane/storage/sqlitestore"
)

// countingCircuits counts the circuit reads a lifecycle makes.
type countingCircuits struct {
	*sqlitestore.Store
	gets atomic.Int64
}

func (c *countingCircuits) CircuitGet(ctx context.Context, subscriptionID string) (*dispatch.Circuit, error) {
	c.gets.Add(1)
	return c.Store.CircuitGet(ctx, subscriptionID)
}

// A healthy endpoint's deliveries read its circuit once per CleanTTL, not
// twice per delivery; a failure is still counted at once, and after it every
// gate reads the circuit again until it is clean.
func TestCleanCircuitIsNotReadOnEveryDelivery(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: filepath.Join(t.TempDir(), "h.db")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	cs := &countingCircuits{Store: st}
	clk := clocktest.New(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	q := memqueue.New(memqueue.Config{NowFunc: clk.Now})
	t.Cleanup(func() { _ = q.Close() })
	ids := idgen.New(clk.Now)
	lc := dispatch.NewLifecycle(dispatch.LifecycleConfig{
		Store: st, Queue: q, NewID: ids.New, NowFunc: clk.Now, Logger: slog.New(slog.DiscardHandler),
		Circuit: dispatch.CircuitPolicy{Store: cs, Failures: 3, Cooldown: time.Minute, CleanTTL: time.Second},
	})
	newJob := func() *dispatch.Job {
		j := circuitTestJob(ids.New(), clk.Now())
		require.NoError(t, lc.Insert(ctx, []*dispatch.Job{j}))
		return j
	}
	deliver := func(outcome error) {
		j := newJob()
		held, err := lc.HoldForCircuit(ctx, j, time.Minute)
		require.NoError(t, err)
		require.False(t, held)
		require.NoError(t, lc.Claim(ctx, j, dispatch.ClaimParams{Worker: "w", Lease: time.Minute}))
		_, err = lc.RecordOutcome(ctx, j, dispatch.Outcome{Attempted: true, Err: outcome, Attempt: dispatch.Attempt{StatusCode: 200}})
		require.NoError(t, err)
	}

	for range 20 {
		deliver(nil)
	}
	require.EqualValues(t, 1, cs.gets.Load(), "20 healthy deliveries within the TTL: one read")
	clk.Advance(time.Second)
	deliver(nil)
	require.EqualValues(t, 2, cs.gets.Load(), "the TTL passed: read again")

	deliver(errors.New("503"))
	c, err := st.CircuitGet(ctx, "sub-1")
	require.NoError(t, err)
	require.Equal(t, 1, c.ConsecutiveFailures, "a failure is counted at once, fresh entry or not")
	before := cs.gets.Load()
	deliver(nil)
	require.Equal(t, before+2, cs.gets.Load(), "after a failure the gate and the success read the circuit")
	c, err = st.CircuitGet(ctx, "sub-1")
	require.NoError(t, err)
	require.Zero(t, c.ConsecutiveFailures, "the success reset the count")
	before = cs.gets.Load()
	deliver(nil)
	require.Equal(t, before+1, cs.gets.Load(), "the reset was a write, which forgets: the next gate reads it clean")
	deliver(nil)
	require.Equal(t, before+1, cs.gets.Load(), "clean again: no read")
}

// circuitTestJob returns a push job of subscription sub-1 created at now,
// with retries left: its failures count into the circuit.
func circuitTestJob(id string, now time.Time) *dispatch.Job {
	return dispatch.NewTaskJob(&dispatch.TaskSpec{
		ID: id, Code: "order.created", Payload: []byte(`{}`),
		Settings: dispatch.Settings{
			SubscriptionID: "sub-1", Subscription: "orders", Target: "http://127.0.0.1:9/hook",
			Mode: dispatch.ModeImmediate, Delivery: dispatch.DeliveryPush, MaxAgeSeconds: 3600,
			Retry: dispatch.Retry{MaxAttempts: 5, InitialBackoffSeconds: 1, MaxBackoffSeconds: 1},
		},
	}, now.UTC().Truncate(time.Millisecond))
}
