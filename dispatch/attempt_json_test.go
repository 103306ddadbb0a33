package dispatch_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event/cloudevent"
)

// shadowAttempt is how an attempt was encoded before it was written by
// hand: a shadow struct through json.Marshal. The hand-written encoder must
// give the same bytes.
func shadowAttempt(a dispatch.Attempt) ([]byte, error) {
	type plain dispatch.Attempt
	return json.Marshal(struct { //nolint:wrapcheck // test reference
		plain
		StartedAt cloudevent.Timestamp `json:"startedAt"`
	}{plain: plain(a), StartedAt: cloudevent.Timestamp(a.StartedAt)})
}

func TestAttemptJSONIsTheShadowStructs(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 27, 9, 30, 1, 234_567_891, time.FixedZone("x", 3600))
	for _, a := range []dispatch.Attempt{
		{},
		{Attempt: 1, StartedAt: at, DurationMs: 12, StatusCode: 200, Worker: "router-1"},
		{Attempt: 3, StartedAt: at, DurationMs: 30000, Error: "Post \"http://127.0.0.1:9/hook\": dial tcp: connection refused"},
		{Attempt: 2, Action: dispatch.ActionFailed, StartedAt: at, StatusCode: 503, ResponseBody: "<html>\n\tbusy & \"down\"\u2028é\x01</html>", Worker: "pull:w"},
		{Attempt: -1, DurationMs: -5, StatusCode: -1, Error: "\xff invalid utf-8"},
	} {
		want, err := shadowAttempt(a)
		require.NoError(t, err)
		got, err := json.Marshal(a)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
		direct, err := a.MarshalJSON()
		require.NoError(t, err)
		require.JSONEq(t, string(want), string(direct))
	}
}

// BenchmarkAttemptMarshal encodes one attempt, as every write of a job
// does for each of its attempts.
func BenchmarkAttemptMarshal(b *testing.B) {
	a := dispatch.Attempt{Attempt: 1, StartedAt: time.Now(), DurationMs: 12, StatusCode: 503, Error: "HTTP 503", Worker: "router-1"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(a); err != nil {
			b.Fatal(err)
		}
	}
}
