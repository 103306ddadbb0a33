package webhook_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/router/webhook"
	"github.com/hooklane/hooklane/subscription"
)

func storedEvent() *event.Event {
	return &event.Event{ID: "01EVT", Event: cloudevent.Event{
		SpecVersion: "1.0", ID: "evt-1", Source: "/shop", Type: "shop:order:created", Subject: "order:1",
		Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), DataContentType: "application/json",
		Data: json.RawMessage(`{"total":12}`),
		Extensions: map[string]any{
			"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
			"tracestate":  "vendor=1",
		},
	}}
}

func eventJob() *dispatch.Job {
	return &dispatch.Job{
		ID: "01JOBID", Kind: dispatch.KindEvent, Code: "shop:order:created", Subscription: "order-processor",
		TargetURL: "http://receiver.example/hook", TimeoutSeconds: 5,
		Headers: map[string]string{"X-Tenant": "acme", "Authorization": "Bearer t"},
	}
}

func requestBody(t *testing.T, r *http.Request) []byte {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	require.NoError(t, err)
	return b
}

// TestRequestStructuredSignedWithRotation: an EVENT delivery in structured
// mode carries every header of API.md §6 and, during a rotation, one
// signature per secret, each verified by the Standard Webhooks library.
func TestRequestStructuredSignedWithRotation(t *testing.T) {
	t.Parallel()
	oldSecret, newSecret := subscription.NewSecret(), subscription.NewSecret()
	med := webhook.New(webhook.Config{UserAgent: "hooklane/1.2.3"})
	t.Cleanup(med.Close)
	req, err := med.Request(t.Context(), &router.Delivery{
		Job: eventJob(), Event: storedEvent(), Attempt: 3,
		Subscription: &subscription.Subscription{Secrets: []subscription.Secret{{Value: newSecret}, {Value: oldSecret}}},
	})
	require.NoError(t, err)
	body := requestBody(t, req)

	require.Equal(t, http.MethodPost, req.Method)
	require.Equal(t, "application/cloudevents+json", req.Header.Get("Content-Type"))
	require.Equal(t, "01JOBID", req.Header.Get("webhook-id"))
	require.NotEmpty(t, req.Header.Get("webhook-timestamp"))
	require.Equal(t, "3", req.Header.Get("hooklane-attempt"))
	require.Equal(t, "order-processor", req.Header.Get("hooklane-subscription"))
	require.Equal(t, "hooklane/1.2.3", req.Header.Get("User-Agent"))
	require.Equal(t, "acme", req.Header.Get("X-Tenant"))
	require.Equal(t, "Bearer t", req.Header.Get("Authorization"))
	require.Equal(t, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", req.Header.Get("traceparent"))
	require.Equal(t, "vendor=1", req.Header.Get("tracestate"))
	var ce map[string]any
	require.NoError(t, json.Unmarshal(body, &ce))
	require.Equal(t, "evt-1", ce["id"])
	require.Equal(t, map[string]any{"total": float64(12)}, ce["data"])

	sigs := req.Header.Get("webhook-signature")
	require.Len(t, strings.Fields(sigs), 2, sigs)
	for _, secret := range []string{oldSecret, newSecret} {
		wh, err := standardwebhooks.NewWebhook(secret)
		require.NoError(t, err)
		require.NoError(t, wh.Verify(body, req.Header), "signature for one of the rotation's secrets")
	}
	other, err := standardwebhooks.NewWebhook(subscription.NewSecret())
	require.NoError(t, err)
	require.Error(t, other.Verify(body, req.Header), "an unrelated secret must not verify")
}

// dataOnlyRequest renders the dataOnly delivery of ev for a subscription
// signing with secret.
func dataOnlyRequest(t *testing.T, ev *event.Event, secret string) *http.Request {
	t.Helper()
	med := webhook.New(webhook.Config{UserAgent: "hooklane/test"})
	t.Cleanup(med.Close)
	j := eventJob()
	j.DataOnly = true
	req, err := med.Request(t.Context(), &router.Delivery{
		Job: j, Event: ev, Attempt: 1,
		Subscription: &subscription.Subscription{Secrets: []subscription.Secret{{Value: secret}}},
	})
	require.NoError(t, err)
	return req
}

// TestRequestDataOnly: dataOnly sends the data alone with its content type
// and the attributes as ce-* headers (CloudEvents binary mode).
func TestRequestDataOnly(t *testing.T) {
	t.Parallel()
	secret := subscription.NewSecret()
	req := dataOnlyRequest(t, storedEvent(), secret)
	body := requestBody(t, req)
	require.JSONEq(t, `{"total":12}`, string(body))
	require.Equal(t, "application/json", req.Header.Get("Content-Type"))
	require.Equal(t, "1.0", req.Header.Get("ce-specversion"))
	require.Equal(t, "evt-1", req.Header.Get("ce-id"))
	require.Equal(t, "/shop", req.Header.Get("ce-source"))
	require.Equal(t, "shop:order:created", req.Header.Get("ce-type"))
	require.Equal(t, "order:1", req.Header.Get("ce-subject"))
	require.Equal(t, cloudevent.FormatTime(storedEvent().Event.Time), req.Header.Get("ce-time"))
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	require.NoError(t, wh.Verify(body, req.Header))
}

// TestRequestDataOnlyPercentEncodes: ce-* values are percent-encoded as the
// CloudEvents HTTP binding asks (space, '"', '%' and non-ASCII), and decode
// to the stored attributes.
func TestRequestDataOnlyPercentEncodes(t *testing.T) {
	t.Parallel()
	ev := storedEvent()
	ev.Event.Subject = `café "100%" done`
	ev.Event.Extensions = map[string]any{"region": "zürich west"}
	req := dataOnlyRequest(t, ev, subscription.NewSecret())
	require.Equal(t, "caf%C3%A9%20%22100%25%22%20done", req.Header.Get("ce-subject"))
	require.Equal(t, "z%C3%BCrich%20west", req.Header.Get("ce-region"))
	require.Equal(t, "/shop", req.Header.Get("ce-source"), "plain values are sent as they are")
	for name, want := range map[string]string{"ce-subject": ev.Event.Subject, "ce-region": "zürich west"} {
		got, err := url.PathUnescape(req.Header.Get(name))
		require.NoError(t, err)
		require.Equal(t, want, got, name)
	}
}

// TestRequestTask: a TASK job's body is its payload as JSON, signed with its
// secret; no subscription header.
func TestRequestTask(t *testing.T) {
	t.Parallel()
	med := webhook.New(webhook.Config{UserAgent: "hooklane/test"})
	t.Cleanup(med.Close)
	secret := subscription.NewSecret()
	j := &dispatch.Job{ID: "01TASK", Kind: dispatch.KindTask, TargetURL: "http://x.example/", Payload: []byte(`{"a":[1,2]}`), Secret: secret}
	req, err := med.Request(t.Context(), &router.Delivery{Job: j, Attempt: 1})
	require.NoError(t, err)
	body := requestBody(t, req)
	require.JSONEq(t, `{"a":[1,2]}`, string(body))
	require.Equal(t, "application/json", req.Header.Get("Content-Type"))
	require.Empty(t, req.Header.Get("hooklane-subscription"))
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	require.NoError(t, wh.Verify(body, req.Header))
}
