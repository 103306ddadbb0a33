package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// switchReceiver is a webhook receiver on 127.0.0.1 whose answer per path
// the browser scenarios switch with POST /control?path=…&status=…
// (default 200), and optionally &delayMs=… (at most 2 s) before answering.
type switchReceiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	status map[string]int
	delay  map[string]time.Duration
	got    map[string]int
	// auth is the Authorization header of the last delivery per path.
	auth map[string]string
}

func newSwitchReceiver(t *testing.T) *switchReceiver {
	t.Helper()
	r := &switchReceiver{status: map[string]int{}, delay: map[string]time.Duration{}, got: map[string]int{}, auth: map[string]string{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/control" {
			code, err := strconv.Atoi(req.URL.Query().Get("status"))
			if err != nil || code < 100 || code > 599 {
				http.Error(w, "status must be an HTTP status code", http.StatusBadRequest)
				return
			}
			delay, _ := strconv.Atoi(req.URL.Query().Get("delayMs"))
			r.mu.Lock()
			r.status[req.URL.Query().Get("path")] = code
			r.delay[req.URL.Query().Get("path")] = time.Duration(min(max(delay, 0), 2000)) * time.Millisecond
			r.mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		code, ok := r.status[req.URL.Path]
		delay := r.delay[req.URL.Path]
		r.got[req.URL.Path]++
		r.auth[req.URL.Path] = req.Header.Get("Authorization")
		r.mu.Unlock()
		if !ok {
			code = http.StatusOK
		}
		if delay > 0 {
			// A slow receiver, for the slowest-targets table.
			select {
			case <-time.After(delay):
			case <-req.Context().Done():
			}
		}
		w.WriteHeader(code)
		if code >= 400 {
			_, _ = io.WriteString(w, `{"error":"receiver switched to fail"}`)
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// authorization returns the Authorization header of the last delivery to
// path.
func (r *switchReceiver) authorization(path string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.auth[path]
}

func (r *switchReceiver) deliveries(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[path]
}

// uiKeys are the API keys the dashboard scenarios sign in with.
var uiKeys = map[string]string{ //nolint:gochecknoglobals // test fixture
	"admin": "ui-admin-key-0123456789", "viewer": "ui-viewer-key-0123456789",
}

// e2eDir is the browser tests' Node project (api/ui/e2e), with playwright-core
// installed by scripts/install-ui-test-deps.sh.
func e2eDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "api", "ui", "e2e"))
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core", "package.json")); err != nil {
		t.Fatalf("playwright-core is not installed in %s: run scripts/install-ui-test-deps.sh (make test does)", dir)
	}
	return dir
}

// screenshotDir is where the scenarios save their screenshots:
// $HOOKLANE_UI_SCREENSHOTS, or a temporary directory.
func screenshotDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("HOOKLANE_UI_SCREENSHOTS"); d != "" {
		require.NoError(t, os.MkdirAll(d, 0o750))
		return d
	}
	return t.TempDir()
}

// runScenario runs one browser scenario (node api/ui/e2e/<name>.mjs) with a
// bounded time, in its own process group (Chromium and its helpers are
// killed with it), and fails the test unless it passed.
func runScenario(t *testing.T, dir, name string, env map[string]string) {
	t.Helper()
	runScenarioFor(t, dir, name, env, 180*time.Second)
}

// runScenarioFor is runScenario with another time bound.
func runScenarioFor(t *testing.T, dir, name string, env map[string]string, bound time.Duration) {
	t.Helper()
	// Reading the scripts here lets go test's cache see their changes
	// (it tracks the files the test process opens, not node's).
	for _, f := range []string{"lib.mjs", name + ".mjs"} {
		_, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, name+".mjs"))
	cmd.Dir = dir
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s (%v):\n%s", name, time.Since(start).Round(time.Millisecond), out.String())
	if ctx.Err() != nil {
		t.Fatalf("scenario %s did not finish within its time", name)
	}
	if exit, ok := errors.AsType[*exec.ExitError](err); ok {
		t.Fatalf("scenario %s failed (exit %d)", name, exit.ExitCode())
	}
	require.NoError(t, err, "run scenario %s", name)
	require.Contains(t, out.String(), "PASS ")
}

// TestUIDashboardInChromium drives the dashboard at /ui/ in headless
// Chromium (playwright-core over Debian's chromium) against a gateway with
// API keys on: the key dialog, a viewer key that must not see the write
// actions, and the scenarios, one browser each, in sequence.
//
//nolint:paralleltest,tparallel // the scenarios share one gateway and receiver and count its deliveries: they run in sequence
func TestUIDashboardInChromium(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	dir := e2eDir(t)
	shots := screenshotDir(t)
	recv := newSwitchReceiver(t)
	gw := startGateway(t, map[string]string{
		"HOOKLANE_API_KEYS": "ops:admin:" + uiKeys["admin"] + ",dash:viewer:" + uiKeys["viewer"],
	})
	admin := map[string]string{"Authorization": "Bearer " + uiKeys["admin"]}
	post := func(path, body string) map[string]any {
		status, _, out := gw.do(t, http.MethodPost, path, "application/json", body, admin)
		require.Equal(t, http.StatusCreated, status, "%s: %v", path, out)
		return out
	}
	post("/api/event-types", `{"code":"ui.form.order.created","name":"Order created"}`)
	post("/api/event-types", `{"code":"ui.live.order.created","name":"Order created","versions":[{"version":"1.0","status":"CURRENT",
		"schema":{"type":"object","required":["amount","currency"],"properties":{"amount":{"type":"number"},"currency":{"enum":["EUR","USD"]}}}}]}`)
	post("/api/event-types", `{"code":"ui.payment.captured","name":"Payment captured"}`)
	post("/api/event-types", `{"code":"ui.invoice.paid","name":"Invoice paid"}`)
	post("/api/event-types", `{"code":"ui.flaky.ping","name":"Ping"}`)
	post("/api/event-types", `{"code":"ui.account.updated","name":"Account updated"}`)
	post("/api/subscriptions", `{"code":"live-orders","name":"Order fulfilment","eventTypes":[{"eventTypeCode":"ui.live.order.*"}],
		"target":"`+recv.srv.URL+`/hooks/live","mode":"NEXT_ON_ERROR"}`)
	blockSub := post("/api/subscriptions", `{"code":"payments","name":"Payment ledger","eventTypes":[{"eventTypeCode":"ui.payment.captured"}],
		"target":"`+recv.srv.URL+`/hooks/payments","mode":"BLOCK_ON_ERROR","retry":{"maxAttempts":1,"initialBackoffSeconds":1,"maxBackoffSeconds":1}}`)
	post("/api/subscriptions", `{"code":"invoices","name":"Invoice sync","eventTypes":[{"eventTypeCode":"ui.invoice.paid"}],
		"target":"`+recv.srv.URL+`/hooks/invoices","retry":{"maxAttempts":1,"initialBackoffSeconds":1,"maxBackoffSeconds":1}}`)
	flakySub := post("/api/subscriptions", `{"code":"flaky","name":"Flaky endpoint","eventTypes":[{"eventTypeCode":"ui.flaky.ping"}],
		"target":"`+recv.srv.URL+`/hooks/flaky","retry":{"maxAttempts":1,"initialBackoffSeconds":1,"maxBackoffSeconds":1}}`)

	env := map[string]string{
		"CHROMIUM_PATH": chromium, "HOOKLANE_UI_BASE": gw.base, "HOOKLANE_UI_RECEIVER": recv.srv.URL,
		"HOOKLANE_UI_ADMIN_KEY": uiKeys["admin"], "HOOKLANE_UI_VIEWER_KEY": uiKeys["viewer"],
		"HOOKLANE_UI_LIVE_TYPE": "ui.live.order.created", "HOOKLANE_UI_LIVE_SUB": "live-orders",
		"HOOKLANE_UI_BLOCK_TYPE": "ui.payment.captured", "HOOKLANE_UI_BLOCK_SUB_ID": blockSub["id"].(string), "HOOKLANE_UI_BLOCK_PATH": "/hooks/payments",
		"HOOKLANE_UI_RETRY_TYPE": "ui.invoice.paid", "HOOKLANE_UI_RETRY_PATH": "/hooks/invoices",
		"HOOKLANE_UI_CIRCUIT_TYPE": "ui.flaky.ping", "HOOKLANE_UI_CIRCUIT_SUB_ID": flakySub["id"].(string), "HOOKLANE_UI_CIRCUIT_PATH": "/hooks/flaky",
		"HOOKLANE_UI_REPLAY_TYPE": "ui.account.updated", "HOOKLANE_UI_REPLAY_PATH": "/hooks/replay",
	}
	scenario := func(t *testing.T, name string) {
		t.Helper()
		e := map[string]string{"HOOKLANE_UI_SCREENSHOT": filepath.Join(shots, "ui-"+strings.ReplaceAll(name, "_", "-")+".png")}
		maps.Copy(e, env)
		runScenario(t, dir, name, e)
		_, err := os.Stat(e["HOOKLANE_UI_SCREENSHOT"])
		require.NoError(t, err, "scenario %s saved no screenshot", name)
	}

	t.Run("subscription form", func(t *testing.T) {
		scenario(t, "subscription_form")
		status, _, list := gw.do(t, http.MethodGet, "/api/subscriptions", "", "", admin)
		require.Equal(t, http.StatusOK, status)
		var found bool
		for _, s := range list["items"].([]any) {
			found = found || s.(map[string]any)["code"] == "ui-form-orders"
		}
		require.True(t, found, "the form did not create the subscription")
		require.Equal(t, 1, recv.deliveries("/hooks/form"), "the test event was delivered once")
		require.Equal(t, "Bearer ui-form-token-secret", recv.authorization("/hooks/form"), "the token saved in the form, kept by a later save")
	})
	t.Run("jobs live and overview counters", func(t *testing.T) {
		scenario(t, "jobs_live")
		require.Equal(t, 17, recv.deliveries("/hooks/live"))
	})
	t.Run("event types: lifecycle and a payload tried", func(t *testing.T) {
		scenario(t, "event_types")
		status, _, v := gw.do(t, http.MethodGet, "/api/event-types/ui.live.order.created/versions/1.1", "", "", admin)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, "CURRENT", v["status"], "the promote button did not move the version")
	})
	t.Run("blocked lane unblocked by cancel", func(t *testing.T) {
		scenario(t, "blocked_lane")
		require.Equal(t, 16+1+2, recv.deliveries("/hooks/payments"), "16 healthy, the failing head once, the two held after the cancel")
	})
	t.Run("retry a failed job from its page", func(t *testing.T) {
		scenario(t, "retry_job")
		require.Equal(t, 2+3*2, recv.deliveries("/hooks/invoices"), "one job failed and retried, three failed and redriven")
	})
	t.Run("endpoint health: a circuit opens, shows, and is closed", func(t *testing.T) {
		scenario(t, "circuit")
		require.Equal(t, 10+1, recv.deliveries("/hooks/flaky"), "ten failed attempts open the circuit; nothing is sent while it is open; one delivery after it closed")
	})
	t.Run("replay backfills a late subscription", func(t *testing.T) {
		scenario(t, "replay")
		require.Equal(t, 6, recv.deliveries("/hooks/replay"), "each stored event delivered once, the repeated replay sent nothing")
	})
	t.Run("auth off: no key asked", func(t *testing.T) {
		open := startGateway(t, nil)
		runScenario(t, dir, "auth_off", map[string]string{
			"CHROMIUM_PATH": chromium, "HOOKLANE_UI_BASE": open.base,
			"HOOKLANE_UI_SCREENSHOT": filepath.Join(shots, "ui-auth-off.png"),
		})
	})
	if os.Getenv("HOOKLANE_UI_DOCS") != "" {
		// Not a check: the README's screenshots (api/ui/docs/), taken after a
		// minute and a half of mixed traffic. Run with HOOKLANE_UI_DOCS=1
		// HOOKLANE_UI_SCREENSHOTS=api/ui/docs.
		t.Run("docs screenshots", func(t *testing.T) {
			e := map[string]string{"HOOKLANE_UI_SCREENSHOT": filepath.Join(shots, "ui.png")}
			maps.Copy(e, env)
			runScenarioFor(t, dir, "docs_screens", e, 4*time.Minute)
		})
	}
	t.Run("stream drop resumes with Last-Event-ID", func(t *testing.T) {
		p := newStreamProxy(t, gw.base)
		e := map[string]string{"HOOKLANE_UI_SCREENSHOT": filepath.Join(shots, "ui-stream-resume.png")}
		maps.Copy(e, env)
		e["HOOKLANE_UI_BASE"] = p.srv.URL
		runScenario(t, dir, "stream_resume", e)
		ids := p.lastEventIDs()
		require.GreaterOrEqual(t, len(ids), 2, "the page never reconnected")
		require.Empty(t, ids[0], "the first connection resumes nothing")
		require.NotEmpty(t, ids[len(ids)-1], "the reconnect did not send Last-Event-ID")
	})
}

// streamProxy is a loopback reverse proxy in front of the gateway that can
// drop the open status streams and refuse new ones (503) until released,
// recording the Last-Event-ID header of every stream request.
type streamProxy struct {
	srv     *httptest.Server
	mu      sync.Mutex
	open    map[*http.Request]context.CancelFunc
	held    bool
	refused int
	ids     []string
}

func newStreamProxy(t *testing.T, upstream string) *streamProxy {
	t.Helper()
	target, err := url.Parse(upstream)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	p := &streamProxy{open: map[*http.Request]context.CancelFunc{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /__proxy/drop", func(w http.ResponseWriter, _ *http.Request) {
		p.mu.Lock()
		p.held = true
		n := len(p.open)
		for _, cancel := range p.open {
			cancel()
		}
		p.mu.Unlock()
		writeJSON(w, map[string]any{"closed": n})
	})
	mux.HandleFunc("POST /__proxy/release", func(w http.ResponseWriter, _ *http.Request) {
		p.mu.Lock()
		p.held = false
		n := p.refused
		p.mu.Unlock()
		writeJSON(w, map[string]any{"refused": n})
	})
	mux.HandleFunc("POST /__proxy/log", func(w http.ResponseWriter, _ *http.Request) {
		p.mu.Lock()
		refused := p.refused
		p.mu.Unlock()
		writeJSON(w, map[string]any{"lastEventIds": p.lastEventIDs(), "refused": refused})
	})
	mux.HandleFunc("/api/stream", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		if p.held {
			p.refused++
			p.mu.Unlock()
			http.Error(w, "stream held by the test proxy", http.StatusServiceUnavailable)
			return
		}
		p.ids = append(p.ids, r.Header.Get("Last-Event-ID"))
		ctx, cancel := context.WithCancel(r.Context())
		r = r.WithContext(ctx)
		p.open[r] = cancel
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			delete(p.open, r)
			p.mu.Unlock()
			cancel()
		}()
		rp.ServeHTTP(w, r)
	})
	mux.Handle("/", rp)
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *streamProxy) lastEventIDs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string{}, p.ids...)
}

// writeJSON answers v as JSON; an encoding or write failure shows up as the
// scenario's failure to read the answer.
func writeJSON(w http.ResponseWriter, v map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v) //nolint:errchkjson // maps of strings, numbers and string slices always encode; a write error is the page's to see
}
