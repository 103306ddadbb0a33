package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/subscription"
)

// newSubscription returns an active subscription with every field set.
func (b *testBundle) newSubscription(code string, clientID *string) *subscription.Subscription {
	return &subscription.Subscription{
		ID:          b.ids.New(),
		Code:        code,
		Name:        "Sub " + code,
		Description: "receives orders",
		ClientID:    clientID,
		EventTypes: []subscription.Binding{
			{EventTypeCode: "order.created", SpecVersion: "1.0"},
			{EventTypeCode: "order.*"},
		},
		Filters: []subscription.Filter{
			{Field: "data.amount", Op: "gt", Value: json.RawMessage(`100`)},
			{Field: "tenant", Op: "in", Value: json.RawMessage(`["acme","globex"]`)},
		},
		Target:         "http://127.0.0.1:9/hook",
		Headers:        map[string]string{"Authorization": "Bearer x"},
		Mode:           dispatch.ModeBlockOnError,
		Delivery:       dispatch.DeliveryPush,
		DispatchPoolID: new("pool-1"),
		TimeoutSeconds: 10,
		MaxAgeSeconds:  3600,
		DelaySeconds:   5,
		Sequence:       3,
		DataOnly:       true,
		Retry:          dispatch.Retry{MaxAttempts: 3, InitialBackoffSeconds: 1, MaxBackoffSeconds: 30},
		Status:         subscription.StatusActive,
		CustomConfig:   []subscription.KeyValue{{Key: "k", Value: "v"}},
		Auth: &endpoint.Auth{
			Type: endpoint.AuthOAuth2, TokenURL: "https://idp.example/token", ClientID: "gw",
			ClientSecret: "client-secret", Scopes: []string{"hooks:write", "read"}, Audience: "https://receiver.example",
		},
		TLS: &endpoint.TLS{ClientCertificate: "client-cert-pem", ClientKey: "client-key-pem", CACertificate: "ca-pem"},
		Secrets: []subscription.Secret{
			{Value: "whsec_bmV3"},
			{Value: "whsec_b2xk", ExpiresAt: new(baseTime().Add(time.Hour))},
		},
		CreatedAt: baseTime(),
		UpdatedAt: baseTime(),
	}
}

// generation reads the subscription generation.
func (b *testBundle) subscriptionGeneration(t *testing.T) int64 {
	t.Helper()
	g, err := b.store.SubscriptionGeneration(b.ctx)
	require.NoError(t, err)
	return g
}

func testSubscription(t *testing.T, newStore NewStoreFunc) {
	t.Helper()

	t.Run("InsertGetRoundTrip", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		full := b.newSubscription("orders", new("client-1"))
		bare := &subscription.Subscription{
			ID: b.ids.New(), Code: "bare", Status: subscription.StatusPaused,
			StatusReason: new("disabled by the gateway"), CreatedAt: baseTime(), UpdatedAt: baseTime(),
		}
		require.NoError(t, b.store.SubscriptionInsert(b.ctx, full))
		require.NoError(t, b.store.SubscriptionInsert(b.ctx, bare))
		for _, want := range []*subscription.Subscription{full, bare} {
			got, err := b.store.SubscriptionGetByID(b.ctx, want.ID)
			require.NoError(t, err)
			require.Equal(t, want, got)
		}
		_, err := b.store.SubscriptionGetByID(b.ctx, "missing")
		require.ErrorIs(t, err, store.ErrNotFound)
		all, err := b.store.SubscriptionListAll(b.ctx)
		require.NoError(t, err)
		require.ElementsMatch(t, []*subscription.Subscription{full, bare}, all)
	})

	t.Run("TransformationRoundTrip", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		on := b.newSubscription("on", nil)
		on.Transformation = &subscription.Transformation{
			Code: "function handler(webhook) {\n  webhook.payload = {text: `é ${webhook.eventType}`};\n  return webhook;\n}", Enabled: new(true),
		}
		off := b.newSubscription("off", nil)
		off.Transformation = &subscription.Transformation{Code: "function handler(w) { return w }", Enabled: new(false)}
		for _, s := range []*subscription.Subscription{on, off} {
			require.NoError(t, b.store.SubscriptionInsert(b.ctx, s))
			got, err := b.store.SubscriptionGetByID(b.ctx, s.ID)
			require.NoError(t, err)
			require.Equal(t, s, got, "the code and the enabled flag come back as written")
		}

		changed := *on
		changed.Transformation = &subscription.Transformation{Code: "function handler(w) { w.cancel = true; return w }", Enabled: new(false)}
		changed.UpdatedAt = baseTime().Add(time.Minute)
		require.NoError(t, b.store.SubscriptionUpdate(b.ctx, &changed))
		got, err := b.store.SubscriptionGetByID(b.ctx, on.ID)
		require.NoError(t, err)
		require.Equal(t, changed.Transformation, got.Transformation)

		removed := *got
		removed.Transformation = nil
		removed.UpdatedAt = baseTime().Add(2 * time.Minute)
		require.NoError(t, b.store.SubscriptionUpdate(b.ctx, &removed))
		got, err = b.store.SubscriptionGetByID(b.ctx, on.ID)
		require.NoError(t, err)
		require.Nil(t, got.Transformation, "an update without a transformation removes it")
		require.Equal(t, &removed, got)
	})

	t.Run("DestinationRoundTrip", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		sub := b.newSubscription("broker", nil)
		sub.Target = ""
		sub.Destination = json.RawMessage(`{"type":"nats","url":"nats://127.0.0.1:4222","subject":"orders.created",` +
			`"jetstream":true,"token":"nats-secret-token"}`)
		sub.TargetURL = "nats://127.0.0.1:4222/orders.created"
		require.NoError(t, b.store.SubscriptionInsert(b.ctx, sub))
		got, err := b.store.SubscriptionGetByID(b.ctx, sub.ID)
		require.NoError(t, err)
		require.Equal(t, sub, got, "the destination, secrets in clear, and its targetUrl come back as written")

		changed := *got
		changed.Destination = json.RawMessage(`{"type":"kafka","brokers":["127.0.0.1:9092"],"topic":"orders"}`)
		changed.TargetURL = "kafka://127.0.0.1:9092/orders"
		changed.UpdatedAt = baseTime().Add(time.Minute)
		require.NoError(t, b.store.SubscriptionUpdate(b.ctx, &changed))
		all, err := b.store.SubscriptionListAll(b.ctx)
		require.NoError(t, err)
		require.Equal(t, []*subscription.Subscription{&changed}, all)

		removed := changed
		removed.Destination, removed.TargetURL, removed.Target = nil, "", "http://127.0.0.1:9/hook"
		removed.UpdatedAt = baseTime().Add(2 * time.Minute)
		require.NoError(t, b.store.SubscriptionUpdate(b.ctx, &removed))
		got, err = b.store.SubscriptionGetByID(b.ctx, sub.ID)
		require.NoError(t, err)
		require.Nil(t, got.Destination, "an update without a destination removes it")
		require.Equal(t, &removed, got)
	})

	t.Run("UniqueClientAndCode", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		require.NoError(t, b.store.SubscriptionInsert(b.ctx, b.newSubscription("orders", nil)))
		require.ErrorIs(t, b.store.SubscriptionInsert(b.ctx, b.newSubscription("orders", nil)), store.ErrConflict,
			"no client is one scope")
		require.NoError(t, b.store.SubscriptionInsert(b.ctx, b.newSubscription("orders", new("a"))))
		require.ErrorIs(t, b.store.SubscriptionInsert(b.ctx, b.newSubscription("orders", new("a"))), store.ErrConflict)
		require.NoError(t, b.store.SubscriptionInsert(b.ctx, b.newSubscription("orders", new("b"))))
		require.NoError(t, b.store.SubscriptionInsert(b.ctx, b.newSubscription("billing", new("a"))))
		all, err := b.store.SubscriptionListAll(b.ctx)
		require.NoError(t, err)
		require.Len(t, all, 4)
	})

	t.Run("UpdateDelete", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		s := b.newSubscription("orders", new("a"))
		other := b.newSubscription("billing", new("a"))
		require.NoError(t, b.store.SubscriptionInsert(b.ctx, s))
		require.NoError(t, b.store.SubscriptionInsert(b.ctx, other))

		upd := *s
		upd.Status = subscription.StatusPaused
		upd.Secrets = []subscription.Secret{{Value: "whsec_cm90YXRlZA=="}}
		upd.ClientID = nil
		upd.DispatchPoolID = nil
		upd.UpdatedAt = baseTime().Add(time.Hour)
		require.NoError(t, b.store.SubscriptionUpdate(b.ctx, &upd))
		got, err := b.store.SubscriptionGetByID(b.ctx, s.ID)
		require.NoError(t, err)
		require.Equal(t, &upd, got)

		clash := *other
		clash.Code = "orders"
		clash.ClientID = nil
		require.ErrorIs(t, b.store.SubscriptionUpdate(b.ctx, &clash), store.ErrConflict)
		got, err = b.store.SubscriptionGetByID(b.ctx, other.ID)
		require.NoError(t, err)
		require.Equal(t, other, got, "a refused update changes nothing")
		clash.ClientID = new("a")
		require.NoError(t, b.store.SubscriptionUpdate(b.ctx, &clash), "the old (client, code) pair is free again")

		require.ErrorIs(t, b.store.SubscriptionUpdate(b.ctx, b.newSubscription("x", nil)), store.ErrNotFound)
		require.NoError(t, b.store.SubscriptionDelete(b.ctx, s.ID))
		_, err = b.store.SubscriptionGetByID(b.ctx, s.ID)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.ErrorIs(t, b.store.SubscriptionDelete(b.ctx, s.ID), store.ErrNotFound)
		require.NoError(t, b.store.SubscriptionInsert(b.ctx, b.newSubscription("orders", nil)), "a deleted subscription's pair is free")
	})

	t.Run("UpdateIsVersionChecked", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		s := b.newSubscription("orders", nil)
		require.NoError(t, b.store.SubscriptionInsert(b.ctx, s))
		first, err := b.store.SubscriptionGetByID(b.ctx, s.ID)
		require.NoError(t, err)
		second, err := b.store.SubscriptionGetByID(b.ctx, s.ID)
		require.NoError(t, err)
		require.Equal(t, first.Version, second.Version)

		// Two writers read the same version: the first wins, the second is
		// told the subscription changed since it read it.
		first.Name = "first"
		require.NoError(t, b.store.SubscriptionUpdate(b.ctx, first))
		require.Equal(t, second.Version+1, first.Version, "the caller's copy follows the stored version")
		second.Name = "second"
		err = b.store.SubscriptionUpdate(b.ctx, second)
		require.ErrorIs(t, err, store.ErrStale)
		require.ErrorIs(t, err, store.ErrConflict, "a stale write is a conflict to callers that do not tell them apart")
		got, err := b.store.SubscriptionGetByID(b.ctx, s.ID)
		require.NoError(t, err)
		require.Equal(t, first, got, "a stale write changes nothing")

		// An auto-disable between a read and its write: the write must not
		// put the subscription back to ACTIVE.
		read, err := b.store.SubscriptionGetByID(b.ctx, s.ID)
		require.NoError(t, err)
		changed, err := b.store.SubscriptionDisable(b.ctx, &dispatch.SubscriptionDisableParams{
			SubscriptionID: s.ID, Reason: "every attempt failed", At: baseTime().Add(time.Hour),
		})
		require.NoError(t, err)
		require.True(t, changed)
		read.Description = "edited while the gateway disabled it"
		require.ErrorIs(t, b.store.SubscriptionUpdate(b.ctx, read), store.ErrStale)
		got, err = b.store.SubscriptionGetByID(b.ctx, s.ID)
		require.NoError(t, err)
		require.Equal(t, subscription.StatusPaused, got.Status)
		got.Description = read.Description
		require.NoError(t, b.store.SubscriptionUpdate(b.ctx, got), "written again from a fresh read")
	})

	t.Run("GenerationGrows", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		g0 := b.subscriptionGeneration(t)
		s := b.newSubscription("orders", nil)
		require.NoError(t, b.store.SubscriptionInsert(b.ctx, s))
		g1 := b.subscriptionGeneration(t)
		require.Greater(t, g1, g0, "insert")
		require.Equal(t, g1, b.subscriptionGeneration(t), "reads do not change it")
		s.Name = "renamed"
		require.NoError(t, b.store.SubscriptionUpdate(b.ctx, s))
		g2 := b.subscriptionGeneration(t)
		require.Greater(t, g2, g1, "update")
		require.NoError(t, b.store.SubscriptionDelete(b.ctx, s.ID))
		require.Greater(t, b.subscriptionGeneration(t), g2, "delete")
	})

	t.Run("List", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		s0 := b.newSubscription("s0", nil)
		s1 := b.newSubscription("s1", new("a"))
		s1.Status = subscription.StatusPaused
		s2 := b.newSubscription("s2", new("b"))
		s2.EventTypes = []subscription.Binding{{EventTypeCode: "invoice.sent"}}
		s3 := b.newSubscription("s3", new("a"))
		var many []*subscription.Subscription
		for _, s := range []*subscription.Subscription{s0, s1, s2, s3} {
			require.NoError(t, b.store.SubscriptionInsert(b.ctx, s))
			many = append(many, s)
		}
		for i := range 7 {
			s := b.newSubscription(name("bulk-%d", i), new("bulk"))
			require.NoError(t, b.store.SubscriptionInsert(b.ctx, s))
			many = append(many, s)
		}
		ids := func(subs []*subscription.Subscription) []string {
			out := make([]string, len(subs))
			for i, s := range subs {
				out[i] = s.ID
			}
			return out
		}
		tests := []struct {
			name string
			p    subscription.ListParams
			want []*subscription.Subscription
		}{
			{"Status", subscription.ListParams{Status: subscription.StatusPaused}, []*subscription.Subscription{s1}},
			{"Client", subscription.ListParams{ClientID: new("a")}, []*subscription.Subscription{s3, s1}},
			{"NoClient", subscription.ListParams{ClientID: new("")}, []*subscription.Subscription{s0}},
			{"EventType", subscription.ListParams{EventType: "invoice.sent"}, []*subscription.Subscription{s2}},
			{"EventTypeExactOnly", subscription.ListParams{EventType: "order"}, nil},
			{"Combined", subscription.ListParams{Status: subscription.StatusActive, ClientID: new("a"), EventType: "order.*"}, []*subscription.Subscription{s3}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				p := tt.p
				p.Limit = 100
				page, err := b.store.SubscriptionList(b.ctx, &p)
				require.NoError(t, err)
				require.Equal(t, ids(tt.want), ids(page.Subscriptions))
				require.Empty(t, page.NextCursor)
			})
		}
		t.Run("Pagination", func(t *testing.T) {
			t.Parallel()
			var got []*subscription.Subscription
			p := subscription.ListParams{Limit: 3}
			for pages := 0; ; pages++ {
				require.Less(t, pages, 20, "pagination does not end")
				page, err := b.store.SubscriptionList(b.ctx, &p)
				require.NoError(t, err)
				require.LessOrEqual(t, len(page.Subscriptions), 3)
				got = append(got, page.Subscriptions...)
				if page.NextCursor == "" {
					break
				}
				p.Cursor = page.NextCursor
			}
			require.Equal(t, reversed(many), got, "newest first, every field")
		})
	})
}
