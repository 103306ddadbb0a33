package cloudevent_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/event/cloudevent"
)

// attributeErrors flattens what Validate, UnmarshalJSON or CheckDeliverable
// returned into "name: message" lines.
func attributeErrors(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		var ae *cloudevent.AttributeError
		require.ErrorAs(t, e, &ae, "%T %v", e, e)
		out = append(out, ae.Name+": "+ae.Message)
	}
	return out
}

func validEvent() cloudevent.Event {
	return cloudevent.Event{
		SpecVersion: "1.0", ID: "e-1", Source: "/shop", Type: "shop.order.created", Subject: "order:1",
		Extensions: map[string]any{
			"messagegroup": "order:1", "priority": json.Number("3"), "urgent": true,
			"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
			"tracestate":  "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
		},
	}
}

func TestCheckDeliverable(t *testing.T) {
	t.Parallel()
	manyExtensions := func(n int) map[string]any {
		m := make(map[string]any, n)
		for i := range n {
			m["x"+strconv.Itoa(i)] = "v"
		}
		return m
	}
	tests := []struct {
		name string
		edit func(e *cloudevent.Event)
		want []string // "name: message substring"; nil when deliverable
	}{
		{"valid", func(*cloudevent.Event) {}, nil},
		{"utf-8 and tab", func(e *cloudevent.Event) { e.Subject = "straße\tnord" }, nil},
		{"exactly the extension limit", func(e *cloudevent.Event) { e.Extensions = manyExtensions(cloudevent.MaxExtensions) }, nil},
		{
			"one extension too many", func(e *cloudevent.Event) { e.Extensions = manyExtensions(cloudevent.MaxExtensions + 1) },
			[]string{": carries 51 extension attributes; at most 50"},
		},
		{
			"thousands of extensions", func(e *cloudevent.Event) { e.Extensions = manyExtensions(5000) },
			[]string{": carries 5000 extension attributes"},
		},
		{"value at the limit", func(e *cloudevent.Event) { e.Subject = strings.Repeat("s", cloudevent.MaxValueBytes) }, nil},
		{
			"value past the limit", func(e *cloudevent.Event) { e.ID = strings.Repeat("i", cloudevent.MaxValueBytes+1) },
			[]string{"id: must be at most 4096 bytes (it has 4097)"},
		},
		{
			"extension number past the limit", func(e *cloudevent.Event) {
				e.Extensions["n"] = json.Number("1" + strings.Repeat("0", cloudevent.MaxValueBytes))
			},
			[]string{"n: must be at most 4096 bytes"},
		},
		{"all attributes past the total", func(e *cloudevent.Event) {
			for i := range 3 {
				e.Extensions["big"+strconv.Itoa(i)] = strings.Repeat("v", 3000)
			}
		}, []string{": the attributes take"}},
		{
			"line feed in an extension", func(e *cloudevent.Event) { e.Extensions["region"] = "eu\nX-Evil: 1" },
			[]string{"region: must not contain control characters (U+000A at byte 2)"},
		},
		{"carriage return in the subject", func(e *cloudevent.Event) { e.Subject = "a\rb" }, []string{"subject: must not contain control characters"}},
		{"nul in the id", func(e *cloudevent.Event) { e.ID = "a\x00" }, []string{"id: must not contain control characters"}},
		{"escape in the source", func(e *cloudevent.Event) { e.Source = "/\x1b" }, []string{"source: must not contain control characters"}},
		{"delete in the type", func(e *cloudevent.Event) { e.Type = "t\x7f" }, []string{"type: must not contain control characters"}},
		{"control in datacontenttype", func(e *cloudevent.Event) { e.DataContentType = "text/plain\n" }, []string{"datacontenttype: must not contain"}},
		{"control in dataschema", func(e *cloudevent.Event) { e.DataSchema = "https://x/\x01" }, []string{"dataschema: must not contain"}},
		{"traceparent with a line feed", func(e *cloudevent.Event) {
			e.Extensions["traceparent"] = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\n"
		}, []string{"traceparent: must not contain control characters"}},
		{"traceparent not W3C", func(e *cloudevent.Event) { e.Extensions["traceparent"] = "abc" }, []string{"traceparent: must be a W3C traceparent"}},
		{"tracestate not W3C", func(e *cloudevent.Event) { e.Extensions["tracestate"] = "Vendor=1" }, []string{"tracestate: must be a W3C tracestate"}},
		{"several, ordered by name", func(e *cloudevent.Event) {
			e.Extensions["zeta"] = "\x00"
			e.ID = "\n"
		}, []string{"id: must not contain", "zeta: must not contain"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ev := validEvent()
			tt.edit(&ev)
			got := attributeErrors(t, ev.CheckDeliverable())
			require.Len(t, got, len(tt.want), "%q", got)
			for i, w := range tt.want {
				name, msg, _ := strings.Cut(w, ": ")
				require.True(t, strings.HasPrefix(got[i], name+": "), "%q does not start with %q", got[i], name)
				require.Contains(t, got[i], msg)
			}
		})
	}
}

func TestCheckTraceParent(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00",
		"01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-09-what-the-future-holds",
	} {
		require.NoError(t, cloudevent.CheckTraceParent(ok), ok)
	}
	for _, bad := range []string{
		"",
		"abc",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-",
		"00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01",
		"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"00-00000000000000000000000000000000-b7ad6b7169203331-01",
		"00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0g",
		"00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01x",
	} {
		require.Error(t, cloudevent.CheckTraceParent(bad), bad)
	}
}

func TestCheckTraceState(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{
		"",
		"rojo=00f067aa0ba902b7",
		"rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
		" rojo=1 ,\tcongo=2 ",
		"rojo=1,,congo=2",
		"tenant1@vendor=x",
		"a/b*c_d-e=v w",
		strings.TrimSuffix(strings.Repeat("k=v,", 32), ","),
	} {
		require.NoError(t, cloudevent.CheckTraceState(ok), ok)
	}
	for _, bad := range []string{
		"rojo",
		"Rojo=1",
		"1rojo=1",
		"rojo=",
		"rojo=a=b",
		"rojo= ",
		"rojo=\x01",
		"rojo=é",
		"@vendor=1",
		"tenant@=1",
		"tenant@Vendor=1",
		"tenant@toolongsystemid1=1",
		"rojo=" + strings.Repeat("v", 257),
		strings.Repeat("k", 257) + "=v",
		strings.TrimSuffix(strings.Repeat("k=v,", 33), ","),
	} {
		require.Error(t, cloudevent.CheckTraceState(bad), bad)
	}
}

// TestUnmarshalInvalidUTF8: encoding/json replaces invalid UTF-8 and
// escaped lone surrogates by U+FFFD, so different ids would decode equal;
// the event refuses them instead, naming the attribute.
func TestUnmarshalInvalidUTF8(t *testing.T) {
	t.Parallel()
	const envelope = `"specversion":"1.0","source":"/s","type":"t.t"`
	tests := []struct {
		name, doc string
		want      []string
	}{
		{"valid escapes", `{` + envelope + `,"id":"\u00e9\ud83d\ude00\\ud800","x":"\ud83d\ude00"}`, nil},
		{"valid literal U+FFFD", `{` + envelope + `,"id":"` + "\uFFFD" + `\ufffd"}`, nil},
		{"invalid byte in id", `{` + envelope + `,"id":"a` + "\xff" + `"}`, []string{"id: must be valid UTF-8"}},
		{"truncated sequence in source", `{"specversion":"1.0","id":"1","type":"t.t","source":"/` + "\xc3" + `"}`, []string{"source: must be valid UTF-8"}},
		{"invalid byte in an extension", `{` + envelope + `,"id":"1","deduplicationid":"` + "\xed\xa0\x80" + `"}`, []string{"deduplicationid: must be valid UTF-8"}},
		// Data is kept as it came (events stored before the rule must
		// decode); ingest refuses it. A name decodes with U+FFFD, which
		// Validate refuses.
		{"invalid byte in data", `{` + envelope + `,"id":"1","data":{"a":"` + "\xfe" + `"}}`, nil},
		{"invalid byte in a name", `{` + envelope + `,"id":"1","x` + "\xff" + `":"v"}`, nil},
		{"lone high surrogate in id", `{` + envelope + `,"id":"a\ud800"}`, []string{"id: must be valid UTF-8: an escaped lone"}},
		{"lone low surrogate in id", `{` + envelope + `,"id":"\udc00b"}`, []string{"id: must be valid UTF-8: an escaped lone"}},
		{"reversed pair", `{` + envelope + `,"id":"\ude00\ud83d"}`, []string{"id: must be valid UTF-8: an escaped lone"}},
		{"lone surrogate in an extension", `{` + envelope + `,"id":"1","deduplicationid":"k\uD800"}`, []string{"deduplicationid: must be valid UTF-8: an escaped lone"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var ev cloudevent.Event
			got := attributeErrors(t, ev.UnmarshalJSON([]byte(tt.doc)))
			require.Len(t, got, len(tt.want), "%q", got)
			for i, w := range tt.want {
				require.Contains(t, got[i], w)
			}
		})
	}
}

// TestUnmarshalKeepsDataBytes: data is not checked by UnmarshalJSON, so a
// stored event whose data holds invalid UTF-8 (accepted before ingest
// refused it) still decodes, byte for byte; a name with invalid bytes is an
// invalid extension name.
func TestUnmarshalKeepsDataBytes(t *testing.T) {
	t.Parallel()
	doc := `{"specversion":"1.0","id":"1","source":"/s","type":"t.t","data":{"a":"` + "\xfe" + `"}}`
	var ev cloudevent.Event
	require.NoError(t, ev.UnmarshalJSON([]byte(doc)))
	require.JSONEq(t, `{"a":"`+"\xfe"+`"}`, string(ev.Data))

	require.NoError(t, ev.UnmarshalJSON([]byte(`{"specversion":"1.0","id":"1","source":"/s","type":"t.t","x`+"\xff"+`":"v"}`)))
	got := attributeErrors(t, ev.Validate())
	require.Len(t, got, 1)
	require.Contains(t, got[0], "lower-case letters and digits")
}

// TestUnmarshalDistinctIDsStayDistinct is the duplicate collision the UTF-8
// rule prevents: before it, both ids decoded to "a\uFFFD".
func TestUnmarshalDistinctIDsStayDistinct(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		`{"specversion":"1.0","source":"/s","type":"t.t","id":"a` + "\xff" + `"}`,
		`{"specversion":"1.0","source":"/s","type":"t.t","id":"a` + "\xfe" + `"}`,
		`{"specversion":"1.0","source":"/s","type":"t.t","id":"a\ud800"}`,
	} {
		var ev cloudevent.Event
		require.Error(t, ev.UnmarshalJSON([]byte(doc)), doc)
	}
}

func TestValidateLongExtensionName(t *testing.T) {
	t.Parallel()
	ev := validEvent()
	ev.Extensions[strings.Repeat("a", cloudevent.MaxNameLength)] = "ok"
	require.NoError(t, ev.Validate())
	ev.Extensions[strings.Repeat("b", cloudevent.MaxNameLength+1)] = "long"
	got := attributeErrors(t, ev.Validate())
	require.Len(t, got, 1)
	require.Contains(t, got[0], "at most 64 characters")
}
