package router_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/subscription"
)

// TestPausedSubscriptionWaitsThenResumes: a job of a paused subscription is
// parked, not dropped and not delivered; resuming releases it at once (the
// safety poll is minutes away) and the delivery carries both signatures of a
// secret rotation, each verified by the Standard Webhooks library.
func TestPausedSubscriptionWaitsThenResumes(t *testing.T) {
	t.Parallel()
	oldSecret, newSecret := subscription.NewSecret(), subscription.NewSecret()
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		for _, s := range []string{oldSecret, newSecret} {
			wh, err := standardwebhooks.NewWebhook(s)
			if err != nil || wh.Verify(body, r.Header) != nil {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
		}
		got <- r.Header.Clone()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	g := newGW(t, gwOptions{})
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	overlap := now.Add(24 * time.Hour)
	sub := &subscription.Subscription{
		ID: g.ids.New(), Code: "order-processor", Target: srv.URL,
		EventTypes: []subscription.Binding{{EventTypeCode: "shop:order:created"}},
		Secrets:    []subscription.Secret{{Value: newSecret}, {Value: oldSecret, ExpiresAt: &overlap}},
		CreatedAt:  now, UpdatedAt: now,
	}
	sub.ApplyDefaults()
	sub.Status = subscription.StatusPaused
	require.NoError(t, g.st.SubscriptionInsert(ctx, sub))

	ev := &event.Event{ID: g.ids.New(), ReceivedAt: now, DedupKey: "/shop\x00e1", Event: cloudevent.Event{
		SpecVersion: "1.0", ID: "e1", Source: "/shop", Type: "shop:order:created", Time: now,
		DataContentType: "application/json", Data: json.RawMessage(`{"id":1}`),
	}}
	j := &dispatch.Job{
		ID: g.ids.New(), Kind: dispatch.KindEvent, Code: "shop:order:created", EventID: ev.ID, SubscriptionID: sub.ID,
		Subscription: sub.Code, TargetURL: srv.URL, Mode: dispatch.ModeImmediate, Delivery: dispatch.DeliveryPush,
		TimeoutSeconds: 5, MaxAgeSeconds: 3600, Retry: sub.Retry, Status: dispatch.StatusQueued, MaxAttempts: sub.Retry.MaxAttempts,
		Attempts: []dispatch.Attempt{}, CreatedAt: now, UpdatedAt: now, Version: 1,
	}
	_, err := g.st.EventIngest(ctx, &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{{Event: ev, Jobs: []*dispatch.Job{j}}}})
	require.NoError(t, err)
	_, err = g.jobs.Send(ctx, []*dispatch.Job{j})
	require.NoError(t, err)

	require.Eventually(t, func() bool {
		cur := g.job(j.ID)
		return cur.Status == dispatch.StatusPending && cur.BlockedBy == dispatch.BlockedByPaused
	}, 60*time.Second, 10*time.Millisecond, "parked while paused")
	require.Empty(t, got, "nothing delivered while paused")

	sub.Status = subscription.StatusActive
	require.NoError(t, g.st.SubscriptionUpdate(ctx, sub))
	n, err := g.jobs.ReleaseSubscription(ctx, sub.ID)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	done := g.waitStatus(j.ID, dispatch.StatusCompleted, 60*time.Second)
	require.Equal(t, 1, done.AttemptCount)
	h := <-got
	require.Equal(t, "order-processor", h.Get("hooklane-subscription"))
	require.Equal(t, j.ID, h.Get("webhook-id"))
}

// TestJobWithoutStoredEventEndsInError covers an operator's retry of a job
// whose event has passed the event retention: the job ends in ERROR with a
// clear reason at once, instead of its message coming back forever.
func TestJobWithoutStoredEventEndsInError(t *testing.T) {
	t.Parallel()
	delivered := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		delivered <- struct{}{}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	g := newGW(t, gwOptions{})
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	sub := &subscription.Subscription{
		ID: g.ids.New(), Code: "orders", Target: srv.URL,
		EventTypes: []subscription.Binding{{EventTypeCode: "shop:order:created"}}, CreatedAt: now, UpdatedAt: now,
	}
	sub.ApplyDefaults()
	require.NoError(t, g.st.SubscriptionInsert(ctx, sub))
	j := &dispatch.Job{
		ID: g.ids.New(), Kind: dispatch.KindEvent, Code: "shop:order:created", EventID: g.ids.New(), SubscriptionID: sub.ID,
		Subscription: sub.Code, TargetURL: srv.URL, Mode: dispatch.ModeImmediate, Delivery: dispatch.DeliveryPush,
		TimeoutSeconds: 5, MaxAgeSeconds: 3600, Retry: sub.Retry, Status: dispatch.StatusQueued, MaxAttempts: sub.Retry.MaxAttempts,
		Attempts: []dispatch.Attempt{}, CreatedAt: now, UpdatedAt: now, Version: 1,
	}
	g.submit(j)

	got := g.waitStatus(j.ID, dispatch.StatusError, 60*time.Second)
	require.NotNil(t, got.LastError)
	require.Contains(t, *got.LastError, "no longer stored")
	require.Zero(t, got.AttemptCount, "nothing was attempted")
	require.Empty(t, delivered)
}
