package subscription_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/subscription"
)

// TestCacheSeesAnotherInstancesChangeWithinASecond measures how long a
// change written by one instance takes to reach another instance's cache
// at the default refresh interval (1 s): a pause, a new target, a secret
// rotation and a delete, each written to the store as another instance's
// service writes it. Deliveries read the subscription from this cache, so
// this is the bound README states ("within about one second"). Each change
// is written as soon as the cache showed the previous one, so mostly just
// after a refresh: near the worst case, the interval plus the rebuild. The
// measured times are logged; the assertion allows ten intervals, as a
// loaded 2-core machine can stall a refresh for seconds (a 2 s margin was
// too tight), and still fails when the refresh stops or slows to the
// scale of a safety poll. The exact bound in refresh rounds (seen by the
// second poll after a change) is TestCacheRun's.
func TestCacheSeesAnotherInstancesChangeWithinASecond(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: filepath.Join(t.TempDir(), "h.db")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })

	now := time.Now().UTC().Truncate(time.Millisecond)
	sub := &subscription.Subscription{
		ID: "01JCROSSINSTANCE0000000001", Code: "cross-instance", Name: "cross instance",
		EventTypes:     []subscription.Binding{{EventTypeCode: "order.created"}},
		Target:         "http://127.0.0.1:9/hook",
		Mode:           dispatch.ModeImmediate,
		Delivery:       dispatch.DeliveryPush,
		TimeoutSeconds: 10,
		Status:         subscription.StatusActive,
		Secrets:        []subscription.Secret{{Value: "whsec_Zmlyc3Q="}},
		CreatedAt:      now, UpdatedAt: now,
	}
	require.NoError(t, st.SubscriptionInsert(ctx, sub))

	other := subscription.NewCache(subscription.CacheConfig{Store: st}) // the default interval
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- other.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		other.Close()
	})
	got, err := other.Get(ctx, sub.ID)
	require.NoError(t, err)
	require.Equal(t, sub.Target, got.Target)

	update := func(change func(*subscription.Subscription)) {
		s, err := st.SubscriptionGetByID(ctx, sub.ID)
		require.NoError(t, err)
		change(s)
		require.NoError(t, st.SubscriptionUpdate(ctx, s))
	}
	changes := []struct {
		name  string
		write func()
		seen  func(*subscription.Subscription, error) bool
	}{
		{
			name:  "pause",
			write: func() { update(func(s *subscription.Subscription) { s.Status = subscription.StatusPaused }) },
			seen: func(s *subscription.Subscription, err error) bool {
				return err == nil && s.Status == subscription.StatusPaused
			},
		},
		{
			name:  "target",
			write: func() { update(func(s *subscription.Subscription) { s.Target = "http://127.0.0.1:9/moved" }) },
			seen: func(s *subscription.Subscription, err error) bool {
				return err == nil && s.Target == "http://127.0.0.1:9/moved"
			},
		},
		{
			name: "secret rotation",
			write: func() {
				update(func(s *subscription.Subscription) {
					s.Secrets = append([]subscription.Secret{{Value: "whsec_c2Vjb25k"}}, s.Secrets...)
				})
			},
			seen: func(s *subscription.Subscription, err error) bool {
				return err == nil && len(s.Secrets) == 2 && s.Secrets[0].Value == "whsec_c2Vjb25k"
			},
		},
		{
			name:  "delete",
			write: func() { require.NoError(t, st.SubscriptionDelete(ctx, sub.ID)) },
			seen:  func(_ *subscription.Subscription, err error) bool { return errors.Is(err, store.ErrNotFound) },
		},
	}
	for _, c := range changes {
		c.write()
		start := time.Now()
		for {
			s, err := other.Get(ctx, sub.ID)
			if c.seen(s, err) {
				break
			}
			require.Less(t, time.Since(start), 10*time.Second, "%s: another instance's change not seen", c.name)
			time.Sleep(5 * time.Millisecond) //nolint:forbidigo // polling the cache as a delivery would read it
		}
		took := time.Since(start)
		t.Logf("%s seen by the other instance's cache after %s", c.name, took.Round(time.Millisecond))
	}
}
