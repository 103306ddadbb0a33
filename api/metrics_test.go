package api_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/api/metrics"
)

func TestMetricsEndpointCountsRequestsByRoute(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{})
	ts := newTestServer(t, func(c *serverConfig) { c.Metrics = m })
	for range 3 {
		resp, _ := ts.do(t, http.MethodGet, "/api/event-types", nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	resp, _ := ts.do(t, http.MethodGet, "/api/dispatch-jobs/01JD0000000000000000000000", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = ts.do(t, http.MethodGet, "/no/such/route", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	resp, _ = ts.do(t, http.MethodGet, "/metrics", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Contains(t, string(body), `hooklane_http_requests_total{code="200",method="GET",route="/api/event-types"} 3`)
	require.Contains(t, string(body), `hooklane_http_requests_total{code="404",method="GET",route="/api/dispatch-jobs/:id"} 1`)
	require.Contains(t, string(body), `hooklane_http_requests_total{code="404",method="GET",route="unmatched"} 1`)
	require.NotContains(t, string(body), "01JD0000000000000000000000", "ids never become labels")
}

func TestMetricsCountTaskJobs(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{})
	ts := newTestServer(t, func(c *serverConfig) { c.Metrics = m })
	resp, body := ts.do(t, http.MethodPost, "/api/dispatch-jobs",
		`{"code":"send.email","targetUrl":"http://127.0.0.1:9/hook","payload":{"to":"a@example.com"}}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", body)
	require.InDelta(t, 1, counterVecChild(t, m, "hooklane_dispatch_jobs_created_total", "TASK"), 0)
}

// counterVecChild reads the child of a counter family that has the label
// value label.
func counterVecChild(t *testing.T, m *metrics.Metrics, name, label string) float64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, mt := range mf.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetValue() == label {
					return mt.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("%s{%s} not found", name, label)
	return 0
}

// TestPanicBecomesProblem: a handler that panics (here: no ingest service
// configured) answers a 500 problem+json, without a stack trace, and the
// server keeps serving.
func TestPanicBecomesProblem(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	ts := newTestServer(t, func(c *serverConfig) {
		c.Ingest = nil
		c.Logger = newJSONLogger(logs)
	})
	resp, body := ts.do(t, http.MethodPost, "/api/events",
		`{"specversion":"1.0","id":"p-1","source":"/t","type":"x.y"}`, "X-Request-Id", "panic-1")
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
	require.Equal(t, "panic-1", resp.Header.Get("X-Request-Id"))
	require.InDelta(t, 500, body["status"], 0)
	require.Equal(t, "internal error", body["detail"])
	require.NotContains(t, strings.ToLower(resp.Header.Get("Content-Type")+body["detail"].(string)), "goroutine")
	require.Contains(t, logs.String(), `"msg":"handler panicked"`)
	require.Contains(t, logs.String(), `"request_id":"panic-1"`)

	resp, _ = ts.do(t, http.MethodGet, "/healthz", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestRequestIDGeneratedWhenMissingOrOdd(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	tests := []struct{ name, sent string }{
		{name: "missing", sent: ""},
		{name: "spaces", sent: "a b"},
		{name: "too long", sent: strings.Repeat("x", 129)},
		{name: "newline", sent: "a\u2028b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var hdr []string
			if tt.sent != "" {
				hdr = []string{"X-Request-Id", tt.sent}
			}
			resp, _ := ts.do(t, http.MethodGet, "/healthz", nil, hdr...)
			got := resp.Header.Get("X-Request-Id")
			require.Len(t, got, 26, "a ULID: %q", got)
			require.NotEqual(t, tt.sent, got)
		})
	}
}

// TestMetricsLabelsStayClosedUnderClientInput: an unauthenticated client
// that sends made-up methods to made-up paths grows neither /metrics nor
// the heap: every method label is a standard method or "other", every route
// a template or "unmatched".
func TestMetricsLabelsStayClosedUnderClientInput(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{})
	ts := newTestServer(t, func(c *serverConfig) { c.Metrics = m })
	for i := range 40 {
		method := "X" + strings.Repeat("Y", i%5) + string(rune('A'+i%26))
		resp, _ := ts.do(t, method, "/api/events/"+method, nil)
		require.NotEqual(t, http.StatusOK, resp.StatusCode)
		resp, _ = ts.do(t, method, "/nowhere/"+method, nil)
		require.NotEqual(t, http.StatusOK, resp.StatusCode)
	}
	resp, _ := ts.do(t, http.MethodGet, "/metrics", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for line := range strings.SplitSeq(string(body), "\n") {
		if !strings.HasPrefix(line, "hooklane_http_") {
			continue
		}
		require.NotRegexp(t, `method="XY*[A-Z]"`, line, "a client's method became a label")
		require.NotContains(t, line, "/nowhere", "a client's path became a label")
	}
	require.Contains(t, string(body), `hooklane_http_requests_total{code="405",method="other",route="unmatched"}`)
}
