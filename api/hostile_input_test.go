package api_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/api"
	"github.com/hooklane/hooklane/event/schema"
)

// pointersOf returns the errors[].pointer of a problem body.
func pointersOf(body map[string]any) []string {
	var out []string
	errs, _ := body["errors"].([]any)
	for _, e := range errs {
		out = append(out, e.(map[string]any)["pointer"].(string))
	}
	return out
}

// numericOrderSchema uses the numeric keywords whose big.Rat arithmetic a
// huge exponent breaks (issue 21 class 2).
const numericOrderSchema = `{"type":"object","required":["amount"],"properties":{"amount":{"type":"number","minimum":0,"multipleOf":0.01},"qty":{"type":"integer"}}}`

// TestHugeNumbersAre422NotPanics: issue 21 class 2 — numbers with huge
// exponents made the validator panic (500) from ingest and from the
// validate endpoint; both answer 422 at the number's pointer.
func TestHugeNumbersAre422NotPanics(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	createType(t, s, "shop.order.created", version("1.0", "CURRENT", numericOrderSchema))
	for _, n := range []string{"1e1000001", "-1e1000001", "1e999999", "1e-999999", "1" + strings.Repeat("0", 200)} {
		resp, got := s.do(t, http.MethodPost, "/api/event-types/shop.order.created/versions/1.0/validate", `{"data":{"amount":`+n+`}}`)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%s: %v", n, got)
		require.Equal(t, []string{"/data/amount"}, pointersOf(got), n)

		ev := `{"specversion":"1.0","id":"h-1","source":"/s","type":"shop.order.created","data":{"amount":1,"qty":` + n + `}}`
		resp, got = s.do(t, http.MethodPost, "/api/events", ev, "Content-Type", "application/cloudevents+json")
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%s: %v", n, got)
		require.Equal(t, []string{"/data/qty"}, pointersOf(got), n)

		batch := `[{"specversion":"1.0","id":"h-2","source":"/s","type":"shop.order.created","data":{"amount":1}},` + strings.Replace(ev, "h-1", "h-3", 1) + `]`
		resp, got = s.do(t, http.MethodPost, "/api/events", batch, "Content-Type", "application/cloudevents-batch+json")
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%s: %v", n, got)
		require.Equal(t, []string{"/1/data/qty"}, pointersOf(got), n)
	}
	resp, got := s.do(t, http.MethodPost, "/api/event-types/shop.order.created/versions/1.0/validate", `{"data":{"amount":1e300,"qty":1e2}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", got)
}

// TestSchemasMustBeUsable: a schema with a $ref cycle (issue 21 class 8)
// or a number past the validator's bounds (class 2) is refused at version
// create and patch, 422 pointing inside /schema; a recursive schema that
// descends (a tree) is accepted.
func TestSchemasMustBeUsable(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	const cyclic = `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`
	const tree = `{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#"}}}}`

	resp, got := s.do(t, http.MethodPost, "/api/event-types", `{"code":"a.cyclic","name":"x","versions":[`+version("1.0", "CURRENT", `{"$ref":"#"}`)+`]}`)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v", got)
	require.Equal(t, []string{"/versions/0/schema/$ref"}, pointersOf(got))

	createType(t, s, "a.tree", version("1.0", "CURRENT", tree))
	resp, got = s.do(t, http.MethodPost, "/api/event-types/a.tree/versions", version("1.1", "FINALISING", cyclic))
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v", got)
	require.Equal(t, []string{"/schema/$defs/b/allOf/0/$ref"}, pointersOf(got))

	resp, got = s.do(t, http.MethodPost, "/api/event-types/a.tree/versions", version("1.2", "FINALISING", `{"type":"number","maximum":1e1000001}`))
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v", got)
	require.Equal(t, []string{"/schema/maximum"}, pointersOf(got))

	resp, got = s.do(t, http.MethodPost, "/api/event-types/a.tree/versions", version("1.3", "FINALISING", `{"type":"object"}`))
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", got)
	resp, got = s.do(t, http.MethodPatch, "/api/event-types/a.tree/versions/1.3", `{"schema":{"anyOf":[{"type":"string"},{"$ref":"#"}]}}`)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v", got)
	require.Equal(t, []string{"/schema/anyOf/1/$ref"}, pointersOf(got))
	resp, got = s.do(t, http.MethodPatch, "/api/event-types/a.tree/versions/1.3", `{"schema":{"multipleOf":1e-999999}}`)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v", got)
	require.Equal(t, []string{"/schema/multipleOf"}, pointersOf(got))

	// A version stored before these rules answers 422, at ingest and at the
	// validate endpoint, not 500 or 503.
	now := time.Now().UTC()
	require.NoError(t, s.Store.EventTypeInsert(t.Context(), &schema.EventType{
		Code: "a.legacy", Name: "x", Status: schema.TypeCurrent,
		CreatedAt: now, UpdatedAt: now, Versions: []schema.Version{{
			Version: "1.0", SchemaType: "JSON_SCHEMA", MimeType: "application/json",
			Schema: json.RawMessage(`{"$ref":"#"}`), Status: schema.VersionCurrent, CreatedAt: now, UpdatedAt: now,
		}},
	}))
	s.Registry.Invalidate()
	resp, got = s.do(t, http.MethodPost, "/api/event-types/a.legacy/versions/1.0/validate", `{"data":{}}`)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v", got)
	require.Equal(t, []string{"/data"}, pointersOf(got))
	resp, got = s.do(t, http.MethodPost, "/api/events", `{"specversion":"1.0","id":"l-1","source":"/s","type":"a.legacy","data":{}}`, "Content-Type", "application/cloudevents+json")
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v", got)
	require.Equal(t, []string{"/data"}, pointersOf(got))

	// The tree still validates trees.
	ev := `{"specversion":"1.0","id":"t-1","source":"/s","type":"a.tree","data":{"name":"root","children":[{"name":"leaf","children":[]}]}}`
	resp, got = s.do(t, http.MethodPost, "/api/events", ev, "Content-Type", "application/cloudevents+json")
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", got)
}

// TestHeaderValuesRefusedAtTheDoor: issue 21 class 3 — a subscription's or
// a TASK job's header value with a control character, or an event
// attribute that goes out as a header, fails every delivery; each is a 422
// at its pointer.
func TestHeaderValuesRefusedAtTheDoor(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	createType(t, s, "shop.order.created")

	resp, got := s.do(t, http.MethodPost, "/api/subscriptions", map[string]any{
		"code": "bell", "eventTypes": []any{map[string]any{"eventTypeCode": "shop.order.created"}},
		"target": "http://127.0.0.1:9/hook", "headers": map[string]any{"X-Token": "secret\u0007", "X-Ok": "a\tb"},
	})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v", got)
	require.Equal(t, []string{"/headers/X-Token"}, pointersOf(got))

	resp, got = s.do(t, http.MethodPost, "/api/dispatch-jobs", taskBody("headers", map[string]any{"X-Del": "tok\u007f"}))
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v", got)
	require.Equal(t, []string{"/headers/X-Del"}, pointersOf(got))

	for _, tc := range []struct{ ext, ptr string }{
		{`"region":"eu\u0000"`, "/region"},
		{`"traceparent":"not-a-traceparent"`, "/traceparent"},
		{`"subject":"order\r\n1"`, "/subject"},
	} {
		ev := `{"specversion":"1.0","id":"x-1","source":"/s","type":"shop.order.created",` + tc.ext + `}`
		resp, got = s.do(t, http.MethodPost, "/api/events", ev, "Content-Type", "application/cloudevents+json")
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%s: %v", tc.ext, got)
		require.Equal(t, []string{tc.ptr}, pointersOf(got), tc.ext)
	}
}

// TestPullReportBounds: issue 21 class 8 — a report with a negative status
// code or an absurd execution time was accepted (a start time overflowed);
// it is a 422 at the field, and a long error message is kept truncated.
func TestPullReportBounds(t *testing.T) {
	t.Parallel()
	s, sub := newPullServer(t, "IMMEDIATE", 3)
	job := ingestOrder(t, s, "o-1")
	code, items := claim(t, s, sub, "w1", "")
	require.Equal(t, http.StatusOK, code)
	require.Len(t, items, 1)

	for _, tc := range []struct {
		extra []any
		ptr   string
	}{
		{[]any{"statusCode", -1}, "/statusCode"},
		{[]any{"statusCode", 1000}, "/statusCode"},
		{[]any{"executionTimeMs", int64(1) << 62}, "/executionTimeMs"},
		{[]any{"executionTimeMs", -1}, "/executionTimeMs"},
	} {
		for _, verb := range []string{"complete", "fail"} {
			status, got := report(t, s, job, verb, "w1", tc.extra...)
			require.Equal(t, http.StatusUnprocessableEntity, status, "%s %v: %v", verb, tc.extra, got)
			require.Equal(t, []string{tc.ptr}, pointersOf(got))
		}
	}
	status, got := report(t, s, job, "complete", strings.Repeat("w", 300))
	require.Equal(t, http.StatusUnprocessableEntity, status, "%v", got)
	require.Equal(t, []string{"/workerId"}, pointersOf(got))
	resp, got := s.do(t, http.MethodPost, "/api/dispatch-jobs/"+job+"/heartbeat", map[string]any{"workerId": "w\n1"})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v", got)
	code, _ = claim(t, s, sub, strings.Repeat("w", 300), "")
	require.Equal(t, http.StatusUnprocessableEntity, code)

	status, got = report(t, s, job, "fail", "w1", "statusCode", 503, "errorMessage", strings.Repeat("x", 10_000))
	require.Equal(t, http.StatusOK, status, "%v", got)
	attempts := got["job"].(map[string]any)["attempts"].([]any)
	last := attempts[len(attempts)-1].(map[string]any)
	require.Len(t, last["error"], 4096)
	require.EqualValues(t, 503, last["statusCode"])
}

// rawIngest opens a TCP connection to the server at url, sends an ingest
// request's head announcing contentLength bytes and then body, and
// returns the connection and a reader of its answer.
func rawIngest(t *testing.T, url string, contentLength int, body string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := new(net.Dialer).DialContext(t.Context(), "tcp", strings.TrimPrefix(url, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = fmt.Fprintf(conn, "POST /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/cloudevents+json\r\nContent-Length: %d\r\n\r\n%s", contentLength, body)
	require.NoError(t, err)
	return conn, bufio.NewReader(conn)
}

// TestIngestBodyCutOffOrSlow: issue 21 class 8 — an ingest body that stops
// before its Content-Length answered 500; it is the client's fault: 400
// when the connection ends it, 408 when the server's read timeout does.
func TestIngestBodyCutOffOrSlow(t *testing.T) {
	t.Parallel()
	base := newTestServer(t, nil)
	srv := httptest.NewUnstartedServer(api.New(base.Config).Handler())
	// The whole-request read timeout of cmd/hooklane (60 s), shortened: the
	// answer below arrives when it expires.
	srv.Config.ReadTimeout = 300 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	const partial = `{"specversion":"1.0","id":"cut","source":"/s",`

	t.Run("cut off", func(t *testing.T) {
		t.Parallel()
		conn, r := rawIngest(t, srv.URL, 500, partial)
		require.NoError(t, conn.(*net.TCPConn).CloseWrite())
		resp, err := http.ReadResponse(r, nil)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", body)
		require.Contains(t, string(body), "could not be read")
	})
	t.Run("too slow", func(t *testing.T) {
		t.Parallel()
		_, r := rawIngest(t, srv.URL, 500, partial) // the rest never comes
		resp, err := http.ReadResponse(r, nil)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, "%s", body)
	})
}
