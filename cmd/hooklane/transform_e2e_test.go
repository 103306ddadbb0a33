package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
)

// transformGateway is a gateway whose circuit opens after one counted
// failure, so that a failed transformation counted toward it would show,
// with the extra settings in env.
func transformGateway(t *testing.T, env map[string]string) *gateway {
	t.Helper()
	settings := map[string]string{"HOOKLANE_CIRCUIT_FAILURES": "1"}
	maps.Copy(settings, env)
	gw := startGateway(t, settings)
	status, _, body := gw.do(t, http.MethodPost, "/api/event-types", "application/json", `{"code":"shop.order.created","name":"Order created"}`, nil)
	require.Equal(t, http.StatusCreated, status, "%v", body)
	return gw
}

// subscribe creates a subscription to shop.order.* at target that runs code
// ("" for none) and returns its id and signing secret.
func (g *gateway) subscribe(t *testing.T, code, target, transformation string) (id, secret string) {
	t.Helper()
	req := map[string]any{"code": code, "eventTypes": []map[string]string{{"eventTypeCode": "shop.order.*"}}, "target": target}
	if transformation != "" {
		req["transformation"] = map[string]any{"code": transformation}
	}
	b, err := json.Marshal(req)
	require.NoError(t, err)
	status, _, sub := g.do(t, http.MethodPost, "/api/subscriptions", "application/json", string(b), nil)
	require.Equal(t, http.StatusCreated, status, "%v", sub)
	return sub["id"].(string), sub["secret"].(string)
}

// publish posts an order event and returns its jobs by subscription code.
func (g *gateway) publish(t *testing.T, id string, total int) map[string]string {
	t.Helper()
	status, _, ev := g.do(t, http.MethodPost, "/api/events", "application/cloudevents+json", fmt.Sprintf(
		`{"specversion":"1.0","id":%q,"source":"/shop","type":"shop.order.created","data":{"orderId":%q,"total":%d,"customer":{"email":"ada@example.com"}}}`,
		id, id, total), nil)
	require.Equal(t, http.StatusCreated, status, "%v", ev)
	jobs := map[string]string{}
	for _, j := range ev["dispatchJobs"].([]any) {
		j := j.(map[string]any)
		jobs[j["subscription"].(string)] = j["id"].(string)
	}
	return jobs
}

// circuit returns a subscription's circuit as GET /api/subscriptions/{id}
// shows it.
func (g *gateway) circuit(t *testing.T, id string) map[string]any {
	t.Helper()
	status, _, sub := g.do(t, http.MethodGet, "/api/subscriptions/"+id, "", "", nil)
	require.Equal(t, http.StatusOK, status, "%v", sub)
	return sub["circuit"].(map[string]any)
}

// The transformation renames fields and PUTs to a path bearing the order id:
// the receiver gets the transformed body, signed over it, with the custom
// header the handler added.
func TestTransformEndToEndReshapesSignedRequest(t *testing.T) {
	t.Parallel()
	gw := transformGateway(t, nil)
	pathRecv := newShapeReceiver(t)
	_, secret := gw.subscribe(t, "partner", pathRecv.srv.URL+"/orders", `function handler(webhook) {
  const d = webhook.payload.data;
  webhook.method = "PUT";
  webhook.url = webhook.url + "/" + encodeURIComponent(d.orderId);
  webhook.payload = {order_id: d.orderId, amount: d.total, email: d.customer.email, kind: webhook.eventType};
  webhook.headers["x-partner"] = "acme";
  return webhook;
}`)
	jobs := gw.publish(t, "o-42", 129)
	gw.waitJob(t, jobs["partner"], "COMPLETED")

	got := pathRecv.wait(t, 1)
	r := got[0]
	require.Equal(t, http.MethodPut, r.method)
	require.Equal(t, "/orders/o-42", r.path)
	require.JSONEq(t, `{"order_id":"o-42","amount":129,"email":"ada@example.com","kind":"shop.order.created"}`, string(r.body))
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	require.Equal(t, "acme", r.header.Get("X-Partner"))
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	require.NoError(t, wh.Verify(r.body, r.header), "the signature covers the transformed body")
}

// A handler that cancels ends the job CANCELLED with nothing sent and no
// attempt counted; one that throws fails its only attempt (ERROR, not
// retried) with the line in lastError, and the circuit, which would open
// after one counted failure, stays CLOSED.
func TestTransformEndToEndCancelAndThrow(t *testing.T) {
	t.Parallel()
	gw := transformGateway(t, nil)
	recv := newReceiver(t)
	gw.subscribe(t, "quiet", recv.srv.URL+"/quiet", `function handler(webhook) {
  webhook.cancel = webhook.payload.data.total < 100;
  return webhook;
}`)
	throwID, _ := gw.subscribe(t, "broken", recv.srv.URL+"/broken", "function handler(webhook) {\n  var t = webhook.payload.data.total;\n  throw new Error(\"no mapping for \" + t);\n}")

	jobs := gw.publish(t, "o-1", 5)
	cancelled := gw.waitJob(t, jobs["quiet"], "CANCELLED")
	require.InDelta(t, 0, cancelled["attemptCount"], 0, "a cancel counts no attempt")
	_, _, withHistory := gw.do(t, http.MethodGet, "/api/dispatch-jobs/"+jobs["quiet"]+"?include=history", "", "", nil)
	require.Contains(t, fmt.Sprint(withHistory["history"]), "transformation cancelled")

	failed := gw.waitJob(t, jobs["broken"], "ERROR")
	require.InDelta(t, 1, failed["attemptCount"], 0, "not retried")
	require.Contains(t, failed["lastError"], "line 3, column ")
	require.Contains(t, failed["lastError"], "no mapping for 5")
	c := gw.circuit(t, throwID)
	require.Equal(t, "CLOSED", c["state"])
	require.InDelta(t, 0, c["consecutiveFailures"], 0, "a failed transformation does not count toward the circuit")

	recv.mu.Lock()
	defer recv.mu.Unlock()
	require.Empty(t, recv.got, "neither sent anything")
}

// A hostile handler — an endless loop on one subscription, endless
// allocation on another — fails its own attempts (timeout, memory) and
// does not stall the deliveries of a third subscription, which runs a
// transformation of its own on the same engine. The metrics count the
// runs by outcome.
func TestTransformEndToEndHostileDoesNotStallOthers(t *testing.T) {
	t.Parallel()
	// The default 100 ms limit: it counts a run's own CPU time, so a loaded
	// machine holding a good run off the CPU (spinning handlers on every
	// core, other race-built gateways at once) does not fail it.
	gw := transformGateway(t, nil)
	recv := newReceiver(t)
	gw.subscribe(t, "spin", recv.srv.URL+"/spin", `function handler(webhook) { while (true) {} }`)
	gw.subscribe(t, "hog", recv.srv.URL+"/hog", `function handler(webhook) {
  var keep = [];
  for (;;) { keep.push({pad: "x".repeat(1024) + keep.length}); }
}`)
	gw.subscribe(t, "good", recv.srv.URL+"/good", `function handler(webhook) {
  webhook.payload = {id: webhook.payload.data.orderId};
  return webhook;
}`)
	const events = 6
	var spin, hog, good []string
	for i := range events {
		jobs := gw.publish(t, fmt.Sprintf("h-%d", i), i)
		spin, hog, good = append(spin, jobs["spin"]), append(hog, jobs["hog"]), append(good, jobs["good"])
	}
	for _, id := range good {
		j := gw.waitFinal(t, id)
		require.Equal(t, "COMPLETED", j["status"], "a good delivery failed: %v", j["lastError"])
	}
	got := recv.waitFor(t, events)
	ids := map[string]bool{}
	for _, d := range got {
		var body map[string]string
		require.NoError(t, json.Unmarshal(d.body, &body), "only the good subscription sends: %s", d.body)
		ids[body["id"]] = true
	}
	require.Len(t, ids, events, "every event reached the good subscription")
	for _, id := range spin {
		j := gw.waitJob(t, id, "ERROR")
		require.Contains(t, j["lastError"], "timeout")
	}
	for _, id := range hog {
		j := gw.waitJob(t, id, "ERROR")
		require.Contains(t, j["lastError"], "transformation")
	}

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, gw.base+"/metrics", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	text, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	var series []string
	for line := range strings.SplitSeq(string(text), "\n") {
		if strings.HasPrefix(line, "hooklane_transform_") && !strings.Contains(line, "_bucket") {
			series = append(series, line)
		}
	}
	require.Contains(t, series, fmt.Sprintf(`hooklane_transform_runs_total{outcome="ok"} %d`, events))
	require.Contains(t, series, fmt.Sprintf(`hooklane_transform_runs_total{outcome="failed"} %d`, 2*events))
	require.Contains(t, series, fmt.Sprintf(`hooklane_transform_failures_total{kind="timeout"} %d`, events+countLines(t, gw, hog, "timeout")))
	require.Contains(t, series, fmt.Sprintf(`hooklane_transform_run_duration_seconds_count %d`, 3*events))
}

// waitFinal waits (at most 30 s) for a job to end and returns it.
func (g *gateway) waitFinal(t *testing.T, id string) map[string]any {
	t.Helper()
	var job map[string]any
	require.Eventually(t, func() bool {
		_, _, job = g.do(t, http.MethodGet, "/api/dispatch-jobs/"+id, "", "", nil)
		s := job["status"]
		return s == "COMPLETED" || s == "ERROR" || s == "CANCELLED"
	}, 30*time.Second, 20*time.Millisecond, "job %s never ended", id)
	return job
}

// countLines counts the jobs among ids whose lastError contains word.
func countLines(t *testing.T, g *gateway, ids []string, word string) int {
	t.Helper()
	n := 0
	for _, id := range ids {
		_, _, j := g.do(t, http.MethodGet, "/api/dispatch-jobs/"+id, "", "", nil)
		if s, _ := j["lastError"].(string); strings.Contains(s, word) {
			n++
		}
	}
	return n
}

// shapedRequest is one request a shapeReceiver got.
type shapedRequest struct {
	method, path string
	header       http.Header
	body         []byte
}

// shapeReceiver is a receiver on 127.0.0.1 that also records each request's
// method and path (receiver keeps headers and body only).
type shapeReceiver struct {
	srv *httptest.Server
	got chan shapedRequest
}

func newShapeReceiver(t *testing.T) *shapeReceiver {
	t.Helper()
	p := &shapeReceiver{got: make(chan shapedRequest, 100)}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p.got <- shapedRequest{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), body: body}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// wait returns the first n requests, failing after a generous bound.
func (p *shapeReceiver) wait(t *testing.T, n int) []shapedRequest {
	t.Helper()
	var out []shapedRequest
	deadline := time.After(30 * time.Second)
	for len(out) < n {
		select {
		case r := <-p.got:
			out = append(out, r)
		case <-deadline:
			t.Fatalf("waited for %d requests, got %d", n, len(out))
		}
	}
	return out
}
