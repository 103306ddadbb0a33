package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// streamPage opens an EventSource on the gateway's status stream, tells the
// test when it is open, and posts the types it saw once a job completed
// (or its own deadline passed).
const streamPage = `<!doctype html>
<html><body><pre id="out">waiting</pre><script>
const seen = [];
const es = new EventSource("/api/stream?types=dispatch.*&subscriptions=orders");
function report(outcome) {
  es.close();
  document.getElementById("out").textContent = outcome + " " + seen.join(",");
  fetch("/result", {method: "POST", body: outcome + " " + seen.join(",")});
}
es.onopen = () => fetch("/opened", {method: "POST"});
for (const t of ["dispatch.created", "dispatch.queued", "dispatch.started", "dispatch.completed", "dispatch.failed"]) {
  es.addEventListener(t, (e) => {
    const ce = JSON.parse(e.data);
    if (ce.type !== t || e.lastEventId !== ce.id) { seen.push("bad:" + t); return; }
    seen.push(t);
    if (t === "dispatch.completed") report("done");
  });
}
setTimeout(() => report("timeout"), 45000);
</script></body></html>`

// chromiumPath returns the browser binary that scripts/install-chromium.sh
// installs.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium not found: run scripts/install-chromium.sh (make test does)")
	return ""
}

func TestStreamInHeadlessChromium(t *testing.T) {
	t.Parallel()
	browser := chromiumPath(t)
	recv := newReceiver(t)
	gw := startGateway(t, nil)
	gw.setup(t, recv.srv.URL+"/hooks/orders", "")

	// The page and the stream share one origin: a loopback server serving
	// the page and proxying /api/ to the gateway, flushing at once.
	target, err := url.Parse(gw.base)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	opened := make(chan struct{}, 4)
	result := make(chan string, 1)
	mux := http.NewServeMux()
	mux.Handle("/api/", proxy)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, streamPage)
	})
	mux.HandleFunc("POST /opened", func(w http.ResponseWriter, _ *http.Request) {
		opened <- struct{}{}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /result", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case result <- string(b):
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	})
	page := httptest.NewServer(mux)
	t.Cleanup(page.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--disable-dev-shm-usage", "--user-data-dir="+t.TempDir(), page.URL+"/")
	// Its own process group, so that stopping it stops its helper
	// processes too; only this group is signalled.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	logs := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() {
		cancel()
		<-exited
	}()

	select {
	case <-opened:
	case <-exited:
		t.Fatalf("chromium exited before the stream opened:\n%s", logs.String())
	case <-ctx.Done():
		t.Fatalf("the page never opened the stream:\n%s", logs.String())
	}
	// The job is created only now: the browser sees it live.
	status, _, ev := gw.do(t, "POST", "/api/events", "application/cloudevents+json",
		`{"specversion":"1.0","id":"browser-1","source":"/shop","type":"shop.order.created","data":{"amount":1}}`, nil)
	require.Equal(t, http.StatusCreated, status, "%v", ev)

	select {
	case got := <-result:
		require.Equal(t, "done dispatch.created,dispatch.queued,dispatch.started,dispatch.completed", got)
	case <-exited:
		t.Fatalf("chromium exited without a result:\n%s", logs.String())
	case <-ctx.Done():
		fmt.Fprintln(os.Stderr, logs.String())
		t.Fatal("no result from the page")
	}
}

// TestStreamEndsOnShutdown: a graceful stop ends open streams cleanly
// instead of waiting for them until the shutdown timeout.
func TestStreamEndsOnShutdown(t *testing.T) {
	t.Parallel()
	args := []string{"--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--shutdown-timeout", "10m"}
	cfg, err := loadConfig(args, func(string) string { return "" })
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, testWriter{t}, func(a string) { addr <- a }) }()
	base := "http://" + <-addr

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/api/stream", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// An open stream must not hold the graceful stop until its timeout
	// (10 min): a stop within 2 min shows it did not, even on a loaded
	// machine.
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
		t.Logf("stopped %v after the signal with a stream open", time.Since(start))
	case <-time.After(2 * time.Minute):
		t.Fatal("the open stream held the shutdown")
	}
	_, err = io.ReadAll(resp.Body)
	require.NoError(t, err, "the stream ended cleanly")
}
