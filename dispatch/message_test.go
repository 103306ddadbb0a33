package dispatch_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
)

func snapshotFixture() (*dispatch.Job, *event.Event) {
	now := time.Date(2026, 11, 24, 4, 0, 0, 123e6, time.UTC)
	next := now.Add(time.Minute)
	ev := &event.Event{ID: "01EVENT", ReceivedAt: now, DedupKey: "/shop\x00e1", SchemaVersion: "1.2", Event: cloudevent.Event{
		SpecVersion: "1.0", ID: "e1", Source: "/shop", Type: "shop:order:created", Subject: "order/1", Time: now,
		DataContentType: "application/json", Data: json.RawMessage(`{"id": 1,  "name":"caf\u00e9 <b>"}`),
		Extensions: map[string]any{"messagegroup": "account:1", "tenant": "acme"},
	}}
	j := &dispatch.Job{
		ID: "01JOB", Kind: dispatch.KindEvent, Code: ev.Event.Type, Subject: "order/1", EventID: ev.ID,
		SubscriptionID: "01SUB", Subscription: "orders", CorrelationID: "c-1", TargetURL: "https://example.invalid/hook",
		Mode: dispatch.ModeBlockOnError, Delivery: dispatch.DeliveryPush, MessageGroup: "account:1", DispatchPoolID: "01POOL",
		Headers: map[string]string{"X-Team": "payments"}, TimeoutSeconds: 30, MaxAgeSeconds: 3600,
		Retry: dispatch.Retry{}.WithDefaults(), Status: dispatch.StatusQueued, AttemptCount: 2, MaxAttempts: 5,
		NextAttemptAt: &next, Attempts: []dispatch.Attempt{{Attempt: 1, StartedAt: now, DurationMs: 12, StatusCode: 500, Error: "HTTP 500"}},
		CreatedAt: now, UpdatedAt: now.Add(time.Second), TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		Version: 7,
	}
	return j, ev
}

// TestMessageSnapshotRoundTrips: what a router reads from a message is the
// job as it was sent, version included, and the event as stored, its data
// byte for byte (whitespace and characters encoding/json would escape).
func TestMessageSnapshotRoundTrips(t *testing.T) {
	t.Parallel()
	j, ev := snapshotFixture()
	m := dispatch.Message(j, ev)
	require.Equal(t, "01JOB-7", m.DedupID)
	require.Equal(t, "account:1", m.Group)
	got, err := dispatch.ReadMessage(m.Body)
	require.NoError(t, err)
	require.Equal(t, "01JOB", got.JobID)
	require.Equal(t, j, got.Job)
	require.Equal(t, ev, got.Event)

	// Binary data too, byte for byte.
	bin := *ev
	bin.Event.Data, bin.Event.DataContentType, bin.Event.DataBase64 = nil, "application/octet-stream", []byte{0, 1, 0xfe, 0xff}
	got, err = dispatch.ReadMessage(dispatch.Message(j, &bin).Body)
	require.NoError(t, err)
	require.Equal(t, &bin, got.Event)

	// Without the event at hand the job travels alone.
	got, err = dispatch.ReadMessage(dispatch.Message(j, nil).Body)
	require.NoError(t, err)
	require.Equal(t, j, got.Job)
	require.Nil(t, got.Event)

	// Another event than the job's is not carried.
	other := *ev
	other.ID = "01OTHER"
	got, err = dispatch.ReadMessage(dispatch.Message(j, &other).Body)
	require.NoError(t, err)
	require.Nil(t, got.Event)
}

// TestMessageCarriesNoSecrets: a job with credentials of its own (a TASK
// job's signing secret, an endpoint's credentials) is sent as its id alone.
func TestMessageCarriesNoSecrets(t *testing.T) {
	t.Parallel()
	task, _ := snapshotFixture()
	task.Kind, task.EventID, task.Secret = dispatch.KindTask, "", "whsec_dG9wLXNlY3JldC10b3Atc2VjcmV0"
	task.Payload = []byte(`{"n":1}`)
	m := dispatch.Message(task, nil)
	require.Equal(t, "01JOB", string(m.Body))
	require.NotContains(t, string(m.Body), "whsec_")

	withAuth, ev := snapshotFixture()
	withAuth.Auth = &endpoint.Auth{Type: endpoint.AuthBearer, Token: "top-secret-token"}
	require.Equal(t, "01JOB", string(dispatch.Message(withAuth, ev).Body))

	pull, ev := snapshotFixture()
	pull.Delivery = dispatch.DeliveryPull
	require.Equal(t, "01JOB", string(dispatch.Message(pull, ev).Body))

	got, err := dispatch.ReadMessage([]byte("01JOB"))
	require.NoError(t, err, "a message of an earlier version (the id alone) is read")
	require.Equal(t, dispatch.MessageContent{JobID: "01JOB"}, got)
}

// TestMessageSnapshotIsBounded: a large event is left out of the message
// and a job too large to travel is sent as its id, so that a batch of ten
// messages stays within SQS's 256 KiB.
func TestMessageSnapshotIsBounded(t *testing.T) {
	t.Parallel()
	j, ev := snapshotFixture()
	ev.Event.Data = json.RawMessage(`"` + strings.Repeat("x", 20<<10) + `"`)
	m := dispatch.Message(j, ev)
	require.LessOrEqual(t, len(m.Body), 24<<10)
	got, err := dispatch.ReadMessage(m.Body)
	require.NoError(t, err)
	require.Equal(t, j, got.Job)
	require.Nil(t, got.Event, "a 20 KiB event is read by the router, not carried")

	big, ev := snapshotFixture()
	big.Headers = map[string]string{}
	for i := range 40 {
		big.Headers["X-H"+strings.Repeat("h", i)] = strings.Repeat("v", 800)
	}
	require.Equal(t, "01JOB", string(dispatch.Message(big, ev).Body))
}

func TestReadMessageRefusesForeignBodies(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		"", "{", "{}", `{"id":"a"}`, `{"id":"a","job":{"id":"b"}}`, `{"id":"a","job":null}`,
		`["a"]`, "a b", strings.Repeat("a", 300),
	} {
		_, err := dispatch.ReadMessage([]byte(body))
		require.ErrorIs(t, err, dispatch.ErrBadMessage, "body %q", body)
	}
}

func FuzzReadMessage(f *testing.F) {
	j, ev := snapshotFixture()
	f.Add(dispatch.Message(j, ev).Body)
	f.Add([]byte("01JOB"))
	f.Add([]byte(`{"id":"a","job":{"id":"a","version":-1},"event":{"id":"x","event":{"data":1}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := dispatch.ReadMessage(body)
		if err == nil && got.JobID == "" {
			t.Fatalf("no job id and no error for %q", body)
		}
	})
}

// messageJobID returns the id of the job a queue message is about.
func messageJobID(t *testing.T, body []byte) string {
	t.Helper()
	c, err := dispatch.ReadMessage(body)
	require.NoError(t, err)
	return c.JobID
}
