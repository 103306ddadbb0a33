package dispatch_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

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

// TestMessageSnapshotIsBase64TextAnEarlierReaderRefuses: a snapshot is
// written in the binary form, as text an SQS body may hold (the prefix,
// then standard base64), smaller than the JSON form; an earlier version's
// ReadMessage, which took a body not starting with '{' and without a
// space, quote or newline for a bare job id, refuses it (the space of the
// prefix) instead of looking up a job of that name.
func TestMessageSnapshotIsBase64TextAnEarlierReaderRefuses(t *testing.T) {
	t.Parallel()
	j, ev := snapshotFixture()
	body := dispatch.Message(j, ev).Body
	prefix, rest, ok := strings.Cut(string(body), " ")
	require.True(t, ok)
	require.Equal(t, "~1", prefix)
	_, err := base64.StdEncoding.DecodeString(rest)
	require.NoError(t, err, "standard base64 after the prefix")
	require.True(t, utf8.Valid(body))
	require.NotEqual(t, byte('{'), body[0])
	require.True(t, bytes.ContainsAny(body, " \"\n"), "an earlier version's ReadMessage refuses it")
	jsonBody := earlierJSONBody(t, j, ev)
	t.Logf("message with its event: %d bytes binary, %d bytes JSON", len(body), len(jsonBody))
	require.Less(t, len(body), len(jsonBody))
}

// earlierJSONBody is j's message with ev as the previous release wrote it:
// a JSON object holding the id, the job's stored fields with its version,
// the event's own fields and its CloudEvent as stored.
func earlierJSONBody(tb testing.TB, j *dispatch.Job, ev *event.Event) []byte {
	tb.Helper()
	type plainJob dispatch.Job
	ce, err := ev.Event.MarshalJSON()
	require.NoError(tb, err)
	b, err := json.Marshal(struct {
		ID  string `json:"id"`
		Job struct {
			*plainJob
			Version int64 `json:"version"`
		} `json:"job"`
		Event map[string]any  `json:"event"`
		CE    json.RawMessage `json:"ce"`
	}{
		ID: j.ID,
		Job: struct {
			*plainJob
			Version int64 `json:"version"`
		}{(*plainJob)(j), j.Version},
		Event: map[string]any{"id": ev.ID, "receivedAt": ev.ReceivedAt, "dedupKey": ev.DedupKey, "schemaVersion": ev.SchemaVersion},
	})
	require.NoError(tb, err)
	// The CloudEvent is appended as stored, never re-encoded.
	return append(append(append(b[:len(b)-len(`"ce":null}`)], `"ce":`...), ce...), '}')
}

// TestReadMessageReadsTheEarlierJSONForm: a message of the previous
// release still in the queue during an upgrade is read, the CloudEvent
// byte for byte.
func TestReadMessageReadsTheEarlierJSONForm(t *testing.T) {
	t.Parallel()
	j, ev := snapshotFixture()
	got, err := dispatch.ReadMessage(earlierJSONBody(t, j, ev))
	require.NoError(t, err)
	require.Equal(t, dispatch.MessageContent{JobID: j.ID, Job: j, Event: ev}, got)
}

// TestReadMessageRefusesDamagedBinaryBodies: every truncation and
// single-character change of a binary body is refused or read — never a
// panic.
func TestReadMessageRefusesDamagedBinaryBodies(t *testing.T) {
	t.Parallel()
	j, ev := snapshotFixture()
	body := dispatch.Message(j, ev).Body
	for n := range body {
		_, err := dispatch.ReadMessage(body[:n])
		require.ErrorIs(t, err, dispatch.ErrBadMessage, "truncated to %d bytes", n)
	}
	for i := range body {
		for _, c := range []byte{'A', '/', '=', '~', ' '} {
			garbled := append([]byte(nil), body...)
			garbled[i] = c
			got, err := dispatch.ReadMessage(garbled)
			if err != nil {
				require.ErrorIs(t, err, dispatch.ErrBadMessage)
				continue
			}
			require.NotEmpty(t, got.JobID)
		}
	}
	for _, bad := range []string{"~1 ", "~1 AAAA", "~1 !!!!", "~1 " + strings.Repeat("A", 300<<10)} {
		_, err := dispatch.ReadMessage([]byte(bad))
		require.ErrorIs(t, err, dispatch.ErrBadMessage, "body %.20q", bad)
	}
}

func FuzzReadMessage(f *testing.F) {
	j, ev := snapshotFixture()
	f.Add(dispatch.Message(j, ev).Body)
	f.Add(dispatch.Message(j, nil).Body)
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

// BenchmarkMessage: writing and reading a snapshot message with its event
// in the binary form, and reading the previous release's JSON form of the
// same message (which ReadMessage still reads).
func BenchmarkMessage(b *testing.B) {
	j, ev := snapshotFixture()
	jsonBody := earlierJSONBody(b, j, ev)
	body := dispatch.Message(j, ev).Body
	b.Run("binary/write", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = dispatch.Message(j, ev)
		}
		b.ReportMetric(float64(len(body)), "bytes")
	})
	b.Run("binary/read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := dispatch.ReadMessage(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json/read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := dispatch.ReadMessage(jsonBody); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(jsonBody)), "bytes")
	})
}

// TestMessageJSONIsTheEarlierForm: the JSON form written for a rolling
// upgrade is the one the previous release wrote and read, and this
// release reads it back whole.
func TestMessageJSONIsTheEarlierForm(t *testing.T) {
	t.Parallel()
	j, ev := snapshotFixture()
	m := dispatch.MessageJSON(j, ev)
	require.JSONEq(t, string(earlierJSONBody(t, j, ev)), string(m.Body))
	require.Equal(t, dispatch.Message(j, ev).DedupID, m.DedupID)
	require.Equal(t, dispatch.Message(j, ev).Group, m.Group)
	got, err := dispatch.ReadMessage(m.Body)
	require.NoError(t, err)
	require.Equal(t, dispatch.MessageContent{JobID: j.ID, Job: j, Event: ev}, got)
}
