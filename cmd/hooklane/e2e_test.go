package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
)

// receiver is a real HTTP webhook receiver on 127.0.0.1 that records every
// delivery and answers with the status its failFunc picks.
type receiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	got      []delivery
	arrived  chan struct{}
	failFunc func(d delivery) int
}

type delivery struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{arrived: make(chan struct{}, 1000)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		d := delivery{header: req.Header.Clone(), body: body}
		r.mu.Lock()
		r.got = append(r.got, d)
		fail := r.failFunc
		r.mu.Unlock()
		status := http.StatusOK
		if fail != nil {
			status = fail(d)
		}
		w.WriteHeader(status)
		r.arrived <- struct{}{}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// waitFor blocks until n deliveries arrived in all, failing after a
// generous bound.
func (r *receiver) waitFor(t *testing.T, n int) []delivery {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		r.mu.Lock()
		got := len(r.got)
		r.mu.Unlock()
		if got >= n {
			r.mu.Lock()
			defer r.mu.Unlock()
			return append([]delivery(nil), r.got...)
		}
		select {
		case <-r.arrived:
		case <-deadline:
			t.Fatalf("waited for %d deliveries, got %d", n, got)
		}
	}
}

type gateway struct {
	base string
}

// startGateway runs `hooklane serve` in-process on the embedded default
// (SQLite in a temp dir, in-process queue) on a free loopback port.
func startGateway(t *testing.T, env map[string]string) *gateway {
	t.Helper()
	args := []string{"--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--allow-private-targets", "--pending-poll-interval", "100ms"}
	cfg, err := loadConfig(args, func(k string) string { return env[k] })
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, testWriter{t}, func(a string) { addr <- a }) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	select {
	case a := <-addr:
		return &gateway{base: "http://" + a}
	case err := <-done:
		t.Fatalf("gateway did not start: %v", err)
	}
	return nil
}

// testWriter sends the gateway's logs to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (g *gateway) do(t *testing.T, method, path, contentType string, body string, header map[string]string) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, g.base+path, strings.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &out), "body: %s", raw)
	}
	return resp.StatusCode, resp.Header, out
}

func (g *gateway) setup(t *testing.T, target string, extra string) (secret string) {
	t.Helper()
	status, _, _ := g.do(t, "POST", "/api/event-types", "application/json", `{"code":"shop.order.created","name":"Order created"}`, nil)
	require.Equal(t, http.StatusCreated, status)
	status, _, sub := g.do(t, "POST", "/api/subscriptions", "application/json",
		`{"code":"orders","eventTypes":[{"eventTypeCode":"shop.order.*"}],"target":"`+target+`"`+extra+`}`, nil)
	require.Equal(t, http.StatusCreated, status, "%v", sub)
	secret, _ = sub["secret"].(string)
	require.True(t, strings.HasPrefix(secret, "whsec_"))
	return secret
}

func (g *gateway) waitJob(t *testing.T, id, status string) map[string]any {
	t.Helper()
	var job map[string]any
	require.Eventually(t, func() bool {
		_, _, job = g.do(t, "GET", "/api/dispatch-jobs/"+id, "", "", nil)
		return job["status"] == status
	}, 30*time.Second, 20*time.Millisecond, "job %s never became %s", id, status)
	return job
}

func TestEndToEndAllContentModes(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	gw := startGateway(t, nil)
	secret := gw.setup(t, recv.srv.URL+"/hooks/orders", "")

	// Structured mode.
	status, hdr, ev := gw.do(t, "POST", "/api/events", "application/cloudevents+json",
		`{"specversion":"1.0","id":"s-1","source":"/shop","type":"shop.order.created","subject":"order:1","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","data":{"amount":10}}`, nil)
	require.Equal(t, http.StatusCreated, status, "%v", ev)
	require.Equal(t, "/api/events/"+ev["id"].(string), hdr.Get("Location"))
	require.Equal(t, false, ev["duplicate"])
	jobs := ev["dispatchJobs"].([]any)
	require.Len(t, jobs, 1)
	structuredJob := jobs[0].(map[string]any)["id"].(string)

	// Binary mode.
	status, _, ev = gw.do(t, "POST", "/api/events", "application/json", `{"amount":20}`, map[string]string{
		"ce-specversion": "1.0", "ce-id": "b-1", "ce-source": "/shop", "ce-type": "shop.order.created", "ce-region": "eu",
	})
	require.Equal(t, http.StatusCreated, status, "%v", ev)
	require.Equal(t, "eu", ev["event"].(map[string]any)["region"])

	// Batch mode.
	status, _, batch := gw.do(t, "POST", "/api/events", "application/cloudevents-batch+json",
		`[{"specversion":"1.0","id":"x-1","source":"/shop","type":"shop.order.created","data":{"amount":30}},
		  {"specversion":"1.0","id":"x-2","source":"/shop","type":"shop.order.created","data":{"amount":40}}]`, nil)
	require.Equal(t, http.StatusCreated, status, "%v", batch)
	require.Len(t, batch["items"], 2)

	got := recv.waitFor(t, 4)
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	ids := map[string]bool{}
	for _, d := range got {
		require.NoError(t, wh.Verify(d.body, d.header), "signature of %s", d.body)
		require.Equal(t, "application/cloudevents+json", d.header.Get("Content-Type"))
		require.Equal(t, "1", d.header.Get("hooklane-attempt"))
		require.Equal(t, "orders", d.header.Get("hooklane-subscription"))
		require.True(t, strings.HasPrefix(d.header.Get("User-Agent"), "hooklane/"))
		var ce map[string]any
		require.NoError(t, json.Unmarshal(d.body, &ce))
		require.Equal(t, "1.0", ce["specversion"])
		require.Equal(t, "/shop", ce["source"])
		require.Equal(t, "shop.order.created", ce["type"])
		require.NotEmpty(t, ce["time"])
		ids[ce["id"].(string)] = true
		if ce["id"] == "s-1" {
			require.Equal(t, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", d.header.Get("traceparent"))
			require.Equal(t, structuredJob, d.header.Get("webhook-id"))
		}
		if ce["id"] == "b-1" {
			require.Equal(t, map[string]any{"amount": float64(20)}, ce["data"])
			require.Equal(t, "eu", ce["region"])
		}
	}
	require.Equal(t, map[string]bool{"s-1": true, "b-1": true, "x-1": true, "x-2": true}, ids)

	job := gw.waitJob(t, structuredJob, "COMPLETED")
	require.EqualValues(t, 1, job["attemptCount"])
	attempts := job["attempts"].([]any)
	require.Len(t, attempts, 1)
	require.EqualValues(t, 200, attempts[0].(map[string]any)["statusCode"])
	require.Equal(t, "shop:order:1"[0:0]+"orders:order:1", job["messageGroup"])
	require.NotNil(t, job["completedAt"])

	// The same event again is a duplicate: 200, the original id and jobs,
	// and no new delivery.
	status, _, dup := gw.do(t, "POST", "/api/events", "application/cloudevents+json",
		`{"specversion":"1.0","id":"s-1","source":"/shop","type":"shop.order.created","data":{"amount":10}}`, nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, true, dup["duplicate"])
	require.Equal(t, structuredJob, dup["dispatchJobs"].([]any)[0].(map[string]any)["id"])
}

func TestEndToEndRetryThenSuccess(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	var calls int
	recv.failFunc = func(delivery) int {
		calls++
		if calls == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	}
	gw := startGateway(t, nil)
	gw.setup(t, recv.srv.URL, `,"retry":{"maxAttempts":3,"initialBackoffSeconds":1,"maxBackoffSeconds":1}`)
	status, _, ev := gw.do(t, "POST", "/api/events", "application/cloudevents+json",
		`{"specversion":"1.0","id":"r-1","source":"/shop","type":"shop.order.created","data":{}}`, nil)
	require.Equal(t, http.StatusCreated, status)
	jobID := ev["dispatchJobs"].([]any)[0].(map[string]any)["id"].(string)

	got := recv.waitFor(t, 2)
	require.Equal(t, "1", got[0].header.Get("hooklane-attempt"))
	require.Equal(t, "2", got[1].header.Get("hooklane-attempt"))
	require.Equal(t, got[0].header.Get("webhook-id"), got[1].header.Get("webhook-id"))
	job := gw.waitJob(t, jobID, "COMPLETED")
	attempts := job["attempts"].([]any)
	require.Len(t, attempts, 2)
	require.EqualValues(t, 503, attempts[0].(map[string]any)["statusCode"])
	require.EqualValues(t, 200, attempts[1].(map[string]any)["statusCode"])
}

func TestEndToEndErrorAtMaxAttemptsAndPermanentFailure(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	recv.failFunc = func(d delivery) int {
		if bytes.Contains(d.body, []byte(`"gone"`)) {
			return http.StatusGone
		}
		return http.StatusInternalServerError
	}
	gw := startGateway(t, nil)
	gw.setup(t, recv.srv.URL, `,"retry":{"maxAttempts":2,"initialBackoffSeconds":1,"maxBackoffSeconds":1}`)
	post := func(id string) string {
		status, _, ev := gw.do(t, "POST", "/api/events", "application/cloudevents+json",
			fmt.Sprintf(`{"specversion":"1.0","id":%q,"source":"/shop","type":"shop.order.created","data":{"id":%q}}`, id, id), nil)
		require.Equal(t, http.StatusCreated, status)
		return ev["dispatchJobs"].([]any)[0].(map[string]any)["id"].(string)
	}
	failing, gone := post("fail"), post("gone")
	job := gw.waitJob(t, failing, "ERROR")
	require.EqualValues(t, 2, job["attemptCount"])
	require.NotNil(t, job["lastError"])
	job = gw.waitJob(t, gone, "ERROR")
	require.EqualValues(t, 1, job["attemptCount"], "a 410 is not retried")

	// An operator retry gives it new attempts.
	recv.mu.Lock()
	recv.failFunc = nil
	recv.mu.Unlock()
	status, _, retried := gw.do(t, "POST", "/api/dispatch-jobs/"+gone+"/retry", "", "", nil)
	require.Equal(t, http.StatusOK, status, "%v", retried)
	job = gw.waitJob(t, gone, "COMPLETED")
	require.EqualValues(t, 2, job["attemptCount"])
}

func TestIngestRejectsBadInput(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, map[string]string{"HOOKLANE_MAX_EVENT_BYTES": "2048", "HOOKLANE_MAX_BATCH": "2"})
	gw.setup(t, "http://127.0.0.1:9/never", "")
	tests := []struct {
		name, contentType, body string
		header                  map[string]string
		status                  int
		pointer                 string
	}{
		{"unsupported content type", "text/plain", "hello", nil, 415, ""},
		{"malformed json", "application/cloudevents+json", `{"specversion":`, nil, 400, ""},
		{"missing id", "application/cloudevents+json", `{"specversion":"1.0","source":"/s","type":"shop.order.created"}`, nil, 400, "/id"},
		{"bad specversion", "application/json", `{"specversion":"0.3","id":"1","source":"/s","type":"shop.order.created"}`, nil, 400, "/specversion"},
		{"bad time", "application/json", `{"specversion":"1.0","id":"1","source":"/s","type":"shop.order.created","time":"yesterday"}`, nil, 400, "/time"},
		{"unknown type", "application/json", `{"specversion":"1.0","id":"1","source":"/s","type":"shop.nothing"}`, nil, 422, "/type"},
		{"batch item invalid", "application/cloudevents-batch+json", `[{"specversion":"1.0","id":"1","source":"/s","type":"shop.order.created"},{"specversion":"1.0","source":"/s","type":"shop.order.created"}]`, nil, 400, "/1/id"},
		{"batch too long", "application/cloudevents-batch+json", `[{},{},{}]`, nil, 413, ""},
		{"event too large", "application/json", `{"specversion":"1.0","id":"1","source":"/s","type":"shop.order.created","data":"` + strings.Repeat("x", 3000) + `"}`, nil, 413, ""},
		{"binary missing type", "application/json", `{}`, map[string]string{"ce-specversion": "1.0", "ce-id": "1", "ce-source": "/s"}, 400, "/type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, hdr, body := gw.do(t, "POST", "/api/events", tt.contentType, tt.body, tt.header)
			require.Equal(t, tt.status, status, "%v", body)
			require.Equal(t, "application/problem+json", hdr.Get("Content-Type"))
			require.EqualValues(t, tt.status, body["status"])
			require.NotEmpty(t, body["title"])
			if tt.pointer != "" {
				errs, _ := body["errors"].([]any)
				require.NotEmpty(t, errs, "%v", body)
				require.Equal(t, tt.pointer, errs[0].(map[string]any)["pointer"])
			}
		})
	}
	// Nothing of a rejected batch was stored.
	_, _, list := gw.do(t, "GET", "/api/events", "", "", nil)
	require.Empty(t, list["items"])
}
