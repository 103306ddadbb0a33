package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/ingest"
)

// hostileEvent is a structured event with the given extra members (already
// JSON: `"name":value` pairs joined by commas, or "").
func hostileEvent(id, extra string) string {
	ev := `{"specversion":"1.0","id":"` + id + `","source":"/s","type":"a.b","data":{"x":1}`
	if extra != "" {
		ev += "," + extra
	}
	return ev + "}"
}

// extensions returns n `"xI":"v"` members.
func extensions(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `"x` + strconv.Itoa(i) + `":"v"`
	}
	return strings.Join(parts, ",")
}

// requireParseError parses a request and requires an *ingest.Error of the
// status whose violations point (exactly, in order) at wantPtrs, each
// message containing the matching wantMsgs entry when given.
func requireParseError(t *testing.T, r *http.Request, status int, wantPtrs []string, wantMsgs ...string) {
	t.Helper()
	_, err := ingest.Parse(r, ingest.Limits{})
	var ie *ingest.Error
	require.ErrorAs(t, err, &ie, "%T %v", err, err)
	require.Equal(t, status, ie.Status, "%v", ie)
	ptrs := make([]string, len(ie.Violations))
	for i, v := range ie.Violations {
		ptrs[i] = v.Pointer
	}
	require.Equal(t, wantPtrs, ptrs, "%v", ie)
	for i, m := range wantMsgs {
		require.Contains(t, ie.Violations[i].Message, m, "%v", ie)
	}
}

func structuredRequest(body string) *http.Request {
	r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/api/events", strings.NewReader(body))
	r.Header.Set("Content-Type", ingest.ContentTypeStructured)
	return r
}

func batchRequest(items ...string) *http.Request {
	r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/api/events", strings.NewReader("["+strings.Join(items, ",")+"]"))
	r.Header.Set("Content-Type", ingest.ContentTypeBatch)
	return r
}

// binaryRequest is a binary-mode request with the required ce-* headers,
// then the given name, value pairs (set raw, as a client may send them).
func binaryRequest(contentType, body string, headers ...string) *http.Request {
	r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/api/events", strings.NewReader(body))
	r.Header.Set("Content-Type", contentType)
	for _, kv := range [][2]string{{"ce-specversion", "1.0"}, {"ce-id", "b-1"}, {"ce-source", "/s"}, {"ce-type", "a.b"}} {
		r.Header.Set(kv[0], kv[1])
	}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header[http.CanonicalHeaderKey(headers[i])] = []string{headers[i+1]}
	}
	return r
}

// TestParseBoundsAttributes: issue 21 class 1 — what one event may carry is
// bounded (extensions, each value, all attributes together), and past a
// bound the answer is a 422 pointing at the attribute, or at the event.
func TestParseBoundsAttributes(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("v", cloudevent.MaxValueBytes+1)
	tests := []struct {
		name     string
		r        *http.Request
		status   int
		wantPtrs []string
		wantMsgs []string
	}{
		{"extensions at the limit", structuredRequest(hostileEvent("1", extensions(cloudevent.MaxExtensions))), 0, nil, nil},
		{
			"one extension too many", structuredRequest(hostileEvent("1", extensions(cloudevent.MaxExtensions+1))), 422,
			[]string{""},
			[]string{"carries 51 extension attributes; at most 50"},
		},
		{
			"thousands of extensions", structuredRequest(hostileEvent("1", extensions(20_000))), 422,
			[]string{""},
			[]string{"more than 50 extension attributes"},
		},
		{
			"thousands of extensions in a batch item", batchRequest(hostileEvent("1", ""), hostileEvent("2", extensions(5_000))), 422,
			[]string{"/1"},
			[]string{"more than 50 extension attributes"},
		},
		{
			"a repeated member counts each time", structuredRequest(hostileEvent("1", strings.Repeat(`"x":"v",`, 100)+`"x":"v"`)), 422,
			[]string{""},
			[]string{"more than 50"},
		},
		{"nested members do not count", structuredRequest(hostileEvent("1", `"n":1,"data2":"`+strings.Repeat(`\",`, 10)+`"`)), 0, nil, nil},
		{
			"subject too long", structuredRequest(hostileEvent("1", `"subject":"`+long+`"`)), 422,
			[]string{"/subject"},
			[]string{"at most 4096 bytes"},
		},
		{"id too long in a batch", batchRequest(hostileEvent(long, "")), 422, []string{"/0/id"}, nil},
		{"extension value too long", structuredRequest(hostileEvent("1", `"region":"`+long+`"`)), 422, []string{"/region"}, nil},
		{
			"attributes too large together", structuredRequest(hostileEvent("1", `"a1":"`+long[:4000]+`","a2":"`+long[:4000]+`","a3":"`+long[:4000]+`"`)), 422,
			[]string{""},
			[]string{"at most 8192"},
		},
		{
			"extension name too long", structuredRequest(hostileEvent("1", `"`+strings.Repeat("n", 65)+`":"v"`)), 400,
			[]string{"/" + strings.Repeat("n", 65)},
			[]string{"at most 64 characters"},
		},
		{
			"binary: too many ce- headers", binaryRequest("application/json", `{}`, strings.Split(strings.ReplaceAll(extensionHeaders(51), "=", ","), ",")...), 422,
			[]string{""},
			[]string{"carries 51 extension attributes"},
		},
		{"binary: value too long", binaryRequest("application/json", `{}`, "ce-subject", long), 422, []string{"/subject"}, nil},
		// Data nesting is bounded by encoding/json (10,000 levels): deeper
		// is malformed JSON, refused before anything is decoded.
		{"data nested 10,000 deep", structuredRequest(hostileEvent("1", `"data":`+strings.Repeat("[", 9_999)+strings.Repeat("]", 9_999))), 0, nil, nil},
		{
			"data nested past 10,000", structuredRequest(hostileEvent("1", `"data":`+strings.Repeat("[", 10_001)+strings.Repeat("]", 10_001))), 400,
			[]string{""},
			[]string{"exceeded max depth"},
		},
		{
			"binary: data nested past 10,000", binaryRequest("application/json", strings.Repeat("[", 10_001)+strings.Repeat("]", 10_001)), 400,
			[]string{"/data"},
			[]string{"exceeded max depth"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.status == 0 {
				req, err := ingest.Parse(tt.r, ingest.Limits{})
				require.NoError(t, err)
				require.Len(t, req.Events, 1)
				return
			}
			requireParseError(t, tt.r, tt.status, tt.wantPtrs, tt.wantMsgs...)
		})
	}
}

// extensionHeaders returns n "ce-xI=v" pairs joined by commas.
func extensionHeaders(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("ce-x%d=v", i)
	}
	return strings.Join(parts, ",")
}

// TestParseRefusesUndeliverableHeaderValues: issue 21 class 3 — every
// attribute can go out as an HTTP header (ce-* in binary-mode delivery;
// traceparent and tracestate always), so one that cannot (control
// characters) or a trace context that is not W3C is refused at the door:
// 422 at its pointer, instead of failing every delivery later.
func TestParseRefusesUndeliverableHeaderValues(t *testing.T) {
	t.Parallel()
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	tests := []struct {
		name     string
		r        *http.Request
		wantPtrs []string
	}{
		{"line feed in an extension", structuredRequest(hostileEvent("1", `"region":"eu\nX-Injected: 1"`)), []string{"/region"}},
		{"carriage return in traceparent", structuredRequest(hostileEvent("1", `"traceparent":"`+tp+`\r"`)), []string{"/traceparent"}},
		{"nul in the id", structuredRequest(hostileEvent(`a\u0000`, "")), []string{"/id"}},
		{"escape in the subject", structuredRequest(hostileEvent("1", `"subject":"\u001b[31m"`)), []string{"/subject"}},
		{"delete in the source", batchRequest(hostileEvent("1", ""), `{"specversion":"1.0","id":"2","source":"/\u007f","type":"a.b"}`), []string{"/1/source"}},
		{"control in datacontenttype", structuredRequest(hostileEvent("1", `"datacontenttype":"application/json\n"`)), []string{"/datacontenttype"}},
		{"traceparent not W3C", structuredRequest(hostileEvent("1", `"traceparent":"abc"`)), []string{"/traceparent"}},
		{"tracestate not W3C", batchRequest(hostileEvent("1", `"tracestate":"Not Valid"`)), []string{"/0/tracestate"}},
		{"binary: percent-encoded line feed", binaryRequest("application/json", `{}`, "ce-subject", "a%0Ab"), []string{"/subject"}},
		{"binary: percent-encoded CR in an extension", binaryRequest("application/json", `{}`, "ce-region", "eu%0D"), []string{"/region"}},
		{"binary: traceparent not W3C", binaryRequest("application/json", `{}`, "ce-traceparent", "00-xyz"), []string{"/traceparent"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			requireParseError(t, tt.r, http.StatusUnprocessableEntity, tt.wantPtrs)
		})
	}
	// Valid trace context, tabs and UTF-8 text go through unchanged.
	req, err := ingest.Parse(structuredRequest(hostileEvent("1", `"traceparent":"`+tp+`","tracestate":"rojo=00f067aa0ba902b7","subject":"straße\tnord"`)), ingest.Limits{})
	require.NoError(t, err)
	require.Equal(t, tp, req.Events[0].Ext("traceparent"))
	require.Equal(t, "straße\tnord", req.Events[0].Subject)
}

// TestParseRefusesInvalidUTF8: issue 21 class 8 — an id (any string
// attribute) with invalid UTF-8 or an escaped lone surrogate used to be
// replaced by U+FFFD, so different ids collided as duplicates: 400 at the
// attribute instead.
func TestParseRefusesInvalidUTF8(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		r        *http.Request
		wantPtrs []string
	}{
		{"invalid byte in the id", structuredRequest(hostileEvent("a\xff", "")), []string{"/id"}},
		{"lone surrogate in the id", structuredRequest(hostileEvent(`a\ud800`, "")), []string{"/id"}},
		{"invalid byte in deduplicationid", structuredRequest(hostileEvent("1", "\"deduplicationid\":\"k\xc3\"")), []string{"/deduplicationid"}},
		{"invalid byte in the source of a batch item", batchRequest(hostileEvent("1", ""), "{\"specversion\":\"1.0\",\"id\":\"2\",\"source\":\"/\xfe\",\"type\":\"a.b\"}"), []string{"/1/source"}},
		{"invalid byte in data", structuredRequest(hostileEvent("1", "\"data\":\"\xff\"")), []string{"/data"}},
		{"binary: percent-encoded invalid byte in the id", binaryRequest("application/json", `{}`, "ce-id", "a%FF"), []string{"/id"}},
		{"binary: raw invalid byte in an extension", binaryRequest("application/json", `{}`, "ce-deduplicationid", "k\xff"), []string{"/deduplicationid"}},
		{"binary: invalid UTF-8 in JSON data", binaryRequest("application/json", "\"\xff\""), []string{"/data"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			requireParseError(t, tt.r, http.StatusBadRequest, tt.wantPtrs, "UTF-8")
		})
	}
}

// TestParseKeepsNonUTF8TextAsBinary: text data that is not UTF-8 (Latin-1)
// was turned into a JSON string with its bytes replaced; it is kept as
// binary data instead, byte for byte.
func TestParseKeepsNonUTF8TextAsBinary(t *testing.T) {
	t.Parallel()
	latin1 := "caf\xe9"
	req, err := ingest.Parse(binaryRequest("text/plain; charset=iso-8859-1", latin1), ingest.Limits{})
	require.NoError(t, err)
	ev := req.Events[0]
	require.Nil(t, ev.Data)
	require.Equal(t, []byte(latin1), ev.DataBase64)

	req, err = ingest.Parse(binaryRequest("text/plain", "café"), ingest.Limits{})
	require.NoError(t, err)
	require.JSONEq(t, `"café"`, string(req.Events[0].Data))
}

// errReader fails every read with err, after handing out prefix.
type errReader struct {
	prefix string
	err    error
}

func (r *errReader) Read(p []byte) (int, error) {
	if r.prefix != "" {
		n := copy(p, r.prefix)
		r.prefix = r.prefix[n:]
		return n, nil
	}
	return 0, r.err
}

// timeoutError is what a connection with an expired read deadline returns.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// TestParseBodyReadFailures: issue 21 class 8 — a body that is cut off or
// does not arrive is the client's fault: 400 or 408, never a plain error
// (which the API answers 500).
func TestParseBodyReadFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		err    error
		status int
	}{
		{"cut off before its Content-Length", io.ErrUnexpectedEOF, http.StatusBadRequest},
		{"broken chunked framing", errors.New("malformed chunked encoding"), http.StatusBadRequest},
		{"read timeout", timeoutError{}, http.StatusRequestTimeout},
		{"deadline exceeded", fmt.Errorf("read tcp: %w", os.ErrDeadlineExceeded), http.StatusRequestTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/api/events", &errReader{prefix: `{"specversion":"1.0",`, err: tt.err})
			r.Header.Set("Content-Type", ingest.ContentTypeStructured)
			_, err := ingest.Parse(r, ingest.Limits{})
			var ie *ingest.Error
			require.ErrorAs(t, err, &ie, "%T %v", err, err)
			require.Equal(t, tt.status, ie.Status, "%v", ie)
		})
	}
}
