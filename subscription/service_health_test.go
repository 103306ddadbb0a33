package subscription_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/health"
	"github.com/hooklane/hooklane/subscription"
)

// TestServiceCircuits: every subscription the Service returns carries its
// stored circuit as the API shows it (an OPEN one past its nextProbeAt as
// HALF_OPEN); one without a stored circuit keeps nil (rendered CLOSED), and
// a pull subscription has none.
func TestServiceCircuits(t *testing.T) {
	t.Parallel()
	b := setupService(t, false)
	ctx := t.Context()
	open, closed := newSub("open", "a.b"), newSub("closed", "a.b")
	pull := newSub("pull", "a.b")
	pull.Delivery, pull.Target = dispatch.DeliveryPull, ""
	for _, sub := range []*subscription.Subscription{open, closed, pull} {
		_, err := b.svc.Create(ctx, sub, nil)
		require.NoError(t, err)
	}
	opened := b.clock().Truncate(time.Millisecond)
	probe := opened.Add(30 * time.Second)
	require.NoError(t, b.store.CircuitUpdate(ctx, &dispatch.CircuitUpdateParams{Circuit: &dispatch.Circuit{
		SubscriptionID: open.ID, State: dispatch.CircuitOpen, ConsecutiveFailures: 10,
		OpenedAt: &opened, NextProbeAt: &probe, Cooldown: 30 * time.Second, FailingSince: &opened, UpdatedAt: opened,
	}}))
	// Even a stored circuit of a pull subscription (it cannot have one) is
	// not shown.
	require.NoError(t, b.store.CircuitUpdate(ctx, &dispatch.CircuitUpdateParams{Circuit: &dispatch.Circuit{
		SubscriptionID: pull.ID, State: dispatch.CircuitOpen, OpenedAt: &opened, NextProbeAt: &probe, UpdatedAt: opened,
	}}))

	got, err := b.svc.Get(ctx, open.ID)
	require.NoError(t, err)
	require.Equal(t, &dispatch.CircuitView{State: dispatch.CircuitOpen, ConsecutiveFailures: 10, OpenedAt: &opened, NextProbeAt: &probe}, got.Circuit)

	pg, err := b.svc.List(ctx, &subscription.ListParams{Limit: 10})
	require.NoError(t, err)
	views := map[string]*dispatch.CircuitView{}
	for _, sub := range pg.Subscriptions {
		views[sub.Code] = sub.Circuit
	}
	require.Equal(t, map[string]*dispatch.CircuitView{"open": got.Circuit, "closed": nil, "pull": nil}, views)

	b.advance(31 * time.Second)
	got, err = b.svc.Pause(ctx, open.ID)
	require.NoError(t, err)
	require.Equal(t, dispatch.CircuitHalfOpen, got.Circuit.State, "an OPEN circuit due for its probe shows HALF_OPEN")
}

// TestServiceResumeAfterDisable: a subscription the gateway disabled is
// PAUSED with a statusReason; resume makes it ACTIVE, clears the reason
// (stored too) and closes its circuit.
func TestServiceResumeAfterDisable(t *testing.T) {
	t.Parallel()
	b := setupService(t, false)
	ctx := t.Context()
	sub := newSub("s1", "a.b")
	_, err := b.svc.Create(ctx, sub, nil)
	require.NoError(t, err)
	changed, err := b.store.SubscriptionDisable(ctx, &dispatch.SubscriptionDisableParams{
		SubscriptionID: sub.ID, Reason: "every attempt failed since 2026-01-19T14:00:00.000Z", At: b.clock(),
	})
	require.NoError(t, err)
	require.True(t, changed)
	got, err := b.svc.Get(ctx, sub.ID)
	require.NoError(t, err)
	require.Equal(t, subscription.StatusPaused, got.Status)
	require.Equal(t, new("every attempt failed since 2026-01-19T14:00:00.000Z"), got.StatusReason)

	got, err = b.svc.Resume(ctx, sub.ID)
	require.NoError(t, err)
	require.Equal(t, subscription.StatusActive, got.Status)
	require.Nil(t, got.StatusReason)
	require.Equal(t, []string{sub.ID + " s1"}, b.jobs.resets)
	stored, err := b.store.SubscriptionGetByID(ctx, sub.ID)
	require.NoError(t, err)
	require.Nil(t, stored.StatusReason)
}

// TestServiceHealth: the health view sums the stored per-minute aggregates
// of the last hour and day, with the last success and failure; a
// subscription with no attempt has empty windows (null rate and
// latencies) and a CLOSED circuit.
func TestServiceHealth(t *testing.T) {
	t.Parallel()
	b := setupService(t, false)
	ctx := t.Context()
	sub := newSub("s1", "a.b")
	_, err := b.svc.Create(ctx, sub, nil)
	require.NoError(t, err)

	h, err := b.svc.Health(ctx, sub.ID)
	require.NoError(t, err)
	require.Equal(t, "s1", h.Subscription)
	require.Equal(t, &dispatch.CircuitView{State: dispatch.CircuitClosed}, h.Circuit)
	require.Nil(t, h.LastSuccessAt)
	require.Nil(t, h.LastError)
	require.Len(t, h.Windows, 2)
	for _, w := range h.Windows {
		require.Zero(t, w.Attempts)
		require.Nil(t, w.SuccessRate)
	}

	now := b.clock()
	minute := now.Truncate(time.Minute)
	recent := health.Bucket{SubscriptionID: sub.ID, Start: minute, Attempts: 4, Succeeded: 3, Failed: 1, Answered: 4, Latency: make([]int64, health.Buckets())}
	recent.Latency[5] = 4 // (7, 10] ms
	old := health.Bucket{SubscriptionID: sub.ID, Start: minute.Add(-3 * time.Hour), Attempts: 6, Failed: 6, Latency: make([]int64, health.Buckets())}
	failedAt := now.Add(-time.Second)
	require.NoError(t, b.store.HealthRecord(ctx, &health.RecordParams{
		Buckets: []health.Bucket{recent, old},
		Lasts:   []health.Last{{SubscriptionID: sub.ID, LastSuccessAt: &now, LastFailureAt: &failedAt, LastError: "HTTP 503"}},
	}))
	h, err = b.svc.Health(ctx, sub.ID)
	require.NoError(t, err)
	require.Equal(t, "1h", h.Windows[0].Window)
	require.Equal(t, int64(4), h.Windows[0].Attempts)
	require.InDelta(t, 0.75, *h.Windows[0].SuccessRate, 1e-9)
	require.Equal(t, "24h", h.Windows[1].Window)
	require.Equal(t, int64(10), h.Windows[1].Attempts)
	require.Equal(t, int64(7), h.Windows[1].Failed)
	require.Equal(t, new("HTTP 503"), h.LastError)
	require.NotNil(t, h.LastSuccessAt)

	_, err = b.svc.Health(ctx, "no-such-id")
	require.Error(t, err)
}
