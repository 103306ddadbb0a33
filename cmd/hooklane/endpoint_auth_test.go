package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination/endpoint/endpointtest"
)

// The endpoint authentication tests (API.md §14) run the gateway in
// process on one data directory across restarts, with loopback receivers
// that each check their own authentication.

// newEncryptionKey returns a fresh HOOKLANE_ENCRYPTION_KEY value.
func newEncryptionKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return base64.StdEncoding.EncodeToString(b)
}

// teeBuffer keeps what is written (safe for concurrent writers) and sends
// it to t.Log too.
type teeBuffer struct {
	t  *testing.T
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *teeBuffer) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p) //nolint:wrapcheck // bytes.Buffer never fails
}

func (w *teeBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// serveAt runs `hooklane serve` on dataDir with env, its logs into logw.
// It returns the gateway and a stop function once the API listens, or the
// error serve returned when it refused to start.
func serveAt(t *testing.T, dataDir string, env map[string]string, logw io.Writer) (*gateway, func(), error) {
	t.Helper()
	args := []string{"--listen", "127.0.0.1:0", "--data-dir", dataDir, "--allow-private-targets", "--pending-poll-interval", "100ms"}
	cfg, err := loadConfig(args, func(k string) string { return env[k] })
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, logw, func(a string) { addr <- a }) }()
	select {
	case a := <-addr:
		var once sync.Once
		stop := func() {
			once.Do(func() {
				cancel()
				require.NoError(t, <-done)
			})
		}
		t.Cleanup(stop)
		return &gateway{base: "http://" + a}, stop, nil
	case err := <-done:
		cancel()
		return nil, nil, err
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("the gateway neither started nor failed")
	}
	return nil, nil, nil
}

// authCheck is a receiver answering 401 to a delivery whose Authorization
// is not want.
func authCheck(t *testing.T, want func() string) *receiver {
	t.Helper()
	r := newReceiver(t)
	r.mu.Lock()
	r.failFunc = func(d delivery) int {
		if d.header.Get("Authorization") != want() {
			return http.StatusUnauthorized
		}
		return http.StatusOK
	}
	r.mu.Unlock()
	return r
}

// testTokenEndpoint is an OAuth 2.0 token endpoint (client credentials)
// that counts its requests.
type testTokenEndpoint struct {
	srv      *httptest.Server
	requests atomic.Int32
}

func newTestTokenEndpoint(t *testing.T, clientSecret string) *testTokenEndpoint {
	t.Helper()
	te := &testTokenEndpoint{}
	te.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := te.requests.Add(1)
		if id, secret, ok := r.BasicAuth(); !ok || id != "e2e-client" || secret != clientSecret {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"access_token":"e2e-access-%d","token_type":"Bearer","expires_in":3600}`, n)
	}))
	t.Cleanup(te.srv.Close)
	return te
}

// authScenario is four subscriptions, one per kind of endpoint auth, and
// a TASK job with its own, each with a receiver that checks it.
type authScenario struct {
	bearer, basic, oauth, task *receiver
	pki                        *endpointtest.PKI
	mtls                       *httptest.Server
	mtlsCount                  atomic.Int32
	tokens                     *testTokenEndpoint
	// secrets are every write-only value the scenario sends; signing are
	// the signing secrets, shown only by their own endpoints.
	secrets, signing []string
	subIDs           []string
	taskID           string
}

func newAuthScenario(t *testing.T) *authScenario {
	t.Helper()
	pki := endpointtest.NewPKI(t)
	s := &authScenario{pki: pki}
	s.secrets = []string{"e2e-bearer-secret-token", "e2e-basic-password", "e2e-oauth-client-secret", "e2e-task-bearer-token", pki.ClientKey}
	s.tokens = newTestTokenEndpoint(t, "e2e-oauth-client-secret")
	s.bearer = authCheck(t, func() string { return "Bearer e2e-bearer-secret-token" })
	s.basic = authCheck(t, func() string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte("e2e-user:e2e-basic-password"))
	})
	s.oauth = authCheck(t, func() string { return fmt.Sprintf("Bearer e2e-access-%d", s.tokens.requests.Load()) })
	s.task = authCheck(t, func() string { return "Bearer e2e-task-bearer-token" })
	s.mtls = pki.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.mtlsCount.Add(1)
		w.WriteHeader(http.StatusOK)
	}), true)
	return s
}

// create makes the subscriptions and the TASK job on g.
func (s *authScenario) create(t *testing.T, g *gateway) {
	t.Helper()
	subs := []struct {
		code, target string
		auth, tls    map[string]any
	}{
		{"bearer", s.bearer.srv.URL, map[string]any{"type": "bearer", "token": "e2e-bearer-secret-token"}, nil},
		{"basic", s.basic.srv.URL, map[string]any{"type": "basic", "username": "e2e-user", "password": "e2e-basic-password"}, nil},
		{"oauth", s.oauth.srv.URL, map[string]any{
			"type": "oauth2", "tokenUrl": s.tokens.srv.URL + "/token", "clientId": "e2e-client",
			"clientSecret": "e2e-oauth-client-secret", "scopes": []string{"hooks"},
		}, nil},
		{"mtls", s.mtls.URL, nil, map[string]any{"clientCertificate": s.pki.ClientCertificate, "clientKey": s.pki.ClientKey, "caCertificate": s.pki.CACertificate}},
	}
	for i, sub := range subs {
		signing := "whsec_" + base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("e2e-signing-secret-%d", i)))
		body := map[string]any{
			"code": sub.code, "eventTypes": []any{map[string]any{"eventTypeCode": "shop.order.created"}},
			"target": sub.target, "secret": signing,
		}
		if sub.auth != nil {
			body["auth"] = sub.auth
		}
		if sub.tls != nil {
			body["tls"] = sub.tls
		}
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		status, _, got := g.do(t, "POST", "/api/subscriptions", "application/json", string(raw), nil)
		require.Equal(t, http.StatusCreated, status, "%v", got)
		s.subIDs = append(s.subIDs, got["id"].(string))
		s.signing = append(s.signing, signing)
	}
	status, _, job := g.do(t, "POST", "/api/dispatch-jobs", "application/json", `{"code":"billing.invoice.send","targetUrl":"`+
		s.task.srv.URL+`","payload":{"invoice":1},"auth":{"type":"bearer","token":"e2e-task-bearer-token"}}`, nil)
	require.Equal(t, http.StatusCreated, status, "%v", job)
	s.taskID = job["id"].(string)
}

// post ingests one order event and waits until every subscription's
// receiver got n deliveries in all.
func (s *authScenario) post(t *testing.T, g *gateway, id string, n int) {
	t.Helper()
	status, _, ev := g.do(t, "POST", "/api/events", "application/cloudevents+json",
		`{"specversion":"1.0","id":"`+id+`","source":"/shop","type":"shop.order.created","data":{"amount":10}}`, nil)
	require.Equal(t, http.StatusCreated, status, "%v", ev)
	for _, r := range []*receiver{s.bearer, s.basic, s.oauth} {
		r.waitFor(t, n)
	}
	require.Eventually(t, func() bool { return s.mtlsCount.Load() >= int32(n) }, 30*time.Second, 10*time.Millisecond) //nolint:gosec // n is a handful of deliveries
	for _, jr := range ev["dispatchJobs"].([]any) {
		g.waitJob(t, jr.(map[string]any)["id"].(string), "COMPLETED")
	}
}

// getRaw returns the body of GET path.
func (g *gateway) getRaw(t *testing.T, path string) []byte {
	t.Helper()
	resp, err := http.Get(g.base + path) //nolint:noctx // a test request
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Less(t, resp.StatusCode, 300, path)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return b
}

// streamUntil reads the status stream from the start until it has seen n
// messages of type typ, and returns what it read.
func (g *gateway) streamUntil(t *testing.T, typ string, n int) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.base+"/api/stream?since=2000-01-01T00:00:00Z", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out bytes.Buffer
	seen := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for seen < n && sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if sc.Text() == "event: "+typ {
			seen++
		}
	}
	require.Equal(t, n, seen, "stream ended early: %v", sc.Err())
	return out.Bytes()
}

// requireNone fails when any secret occurs in text.
func requireNone(t *testing.T, what string, text []byte, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		require.NotContains(t, string(text), s, "a secret in %s", what)
	}
}

// TestEndpointAuthEndToEnd: every auth type reaches a receiver that
// checks it; the write-only secrets appear in no answer, no stream message
// and no log line of the run, nor in plain text in the store; a restart
// with the same key keeps delivering; another key, or none, refuses to
// start.
func TestEndpointAuthEndToEnd(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	key := newEncryptionKey(t)
	env := map[string]string{"HOOKLANE_ENCRYPTION_KEY": key, "HOOKLANE_ALLOW_UNKNOWN_TYPES": "true", "HOOKLANE_LOG_LEVEL": "debug"}
	logs := &teeBuffer{t: t}
	s := newAuthScenario(t)

	g, stop, err := serveAt(t, dataDir, env, logs)
	require.NoError(t, err)
	s.create(t, g)
	s.post(t, g, "e2e-1", 1)
	s.post(t, g, "e2e-2", 2)
	s.task.waitFor(t, 1)
	g.waitJob(t, s.taskID, "COMPLETED")
	require.Equal(t, int32(1), s.tokens.requests.Load(), "one OAuth 2.0 token served every delivery")

	// Every read path: the answers, the stream, the logs.
	paths := []string{
		"/api/subscriptions", "/api/subscriptions?eventType=shop.order.created", "/api/dispatch-jobs",
		"/api/dispatch-jobs?include=history", "/api/events", "/api/dispatch-pools", "/api/event-types", "/api/openapi.json",
		"/metrics", "/healthz", "/readyz", "/ui/", "/api/dispatch-jobs/" + s.taskID + "?include=history",
	}
	for _, id := range s.subIDs {
		paths = append(paths, "/api/subscriptions/"+id, "/api/subscriptions/"+id+"/secret")
	}
	var jobs struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal(g.getRaw(t, "/api/dispatch-jobs"), &jobs))
	require.Len(t, jobs.Items, 9)
	for _, j := range jobs.Items {
		paths = append(paths, "/api/dispatch-jobs/"+j.ID, "/api/dispatch-jobs/"+j.ID+"?include=history")
	}
	for _, p := range paths {
		requireNone(t, "GET "+p, g.getRaw(t, p), s.secrets)
	}
	requireNone(t, "the status stream", g.streamUntil(t, "dispatch.completed", 9), append(s.secrets, s.signing...))
	stop()
	requireNone(t, "the logs", []byte(logs.String()), append(s.secrets, s.signing...))
	require.Contains(t, logs.String(), "stored secrets are encrypted")

	// At rest: no secret in the database files, SQLite's (the control
	// plane) and Pebble's (the data plane: its WAL and tables).
	names := []string{"hooklane.db", "hooklane.db-wal"}
	pebbleFiles, err := os.ReadDir(filepath.Join(dataDir, "events"))
	require.NoError(t, err)
	for _, f := range pebbleFiles {
		if !f.IsDir() {
			names = append(names, filepath.Join("events", f.Name()))
		}
	}
	for _, name := range names {
		raw, err := os.ReadFile(filepath.Join(dataDir, name))
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		requireNone(t, name, raw, append(s.secrets, s.signing...))
	}

	// A restart with the same key decrypts the secrets and keeps delivering.
	g, stop, err = serveAt(t, dataDir, env, logs)
	require.NoError(t, err)
	s.post(t, g, "e2e-3", 3)
	require.Equal(t, int32(2), s.tokens.requests.Load(), "the new process got its own token")
	stop()

	// Another key, or none, refuses to start, with the reason.
	other := map[string]string{"HOOKLANE_ENCRYPTION_KEY": newEncryptionKey(t), "HOOKLANE_ALLOW_UNKNOWN_TYPES": "true"}
	_, _, err = serveAt(t, dataDir, other, logs)
	require.ErrorContains(t, err, "HOOKLANE_ENCRYPTION_KEY (--encryption-key) is not the key the store's secrets were encrypted with")
	require.NotContains(t, err.Error(), key)
	require.NotContains(t, err.Error(), other["HOOKLANE_ENCRYPTION_KEY"])
	_, _, err = serveAt(t, dataDir, map[string]string{}, logs)
	require.ErrorContains(t, err, "the store holds encrypted secrets and HOOKLANE_ENCRYPTION_KEY (--encryption-key) is not set")

	// The command itself exits 1 with the reason.
	var stdout, stderr bytes.Buffer
	code := run([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir}, func(k string) string { return other[k] }, &stdout, &stderr)
	require.Equal(t, 1, code)
	require.Contains(t, stderr.String(), "hooklane: HOOKLANE_ENCRYPTION_KEY (--encryption-key) is not the key")
}

// TestEncryptionKeyFirstSet: secrets written without a key are encrypted
// when a key is first set (the migration at start), and delivery goes on
// with them.
func TestEncryptionKeyFirstSet(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	logs := &teeBuffer{t: t}
	plainEnv := map[string]string{"HOOKLANE_ALLOW_UNKNOWN_TYPES": "true"}
	g, stop, err := serveAt(t, dataDir, plainEnv, logs)
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(logs.String(), "secrets are stored in plain text"), "one warning")
	rcv := authCheck(t, func() string { return "Bearer first-set-token" })
	status, _, sub := g.do(t, "POST", "/api/subscriptions", "application/json", `{"code":"orders","eventTypes":[{"eventTypeCode":"shop.order.created"}],`+
		`"target":"`+rcv.srv.URL+`","auth":{"type":"bearer","token":"first-set-token"}}`, nil)
	require.Equal(t, http.StatusCreated, status, "%v", sub)
	stop()

	env := map[string]string{"HOOKLANE_ENCRYPTION_KEY": newEncryptionKey(t), "HOOKLANE_ALLOW_UNKNOWN_TYPES": "true"}
	g, stop, err = serveAt(t, dataDir, env, logs)
	require.NoError(t, err)
	require.Contains(t, logs.String(), "stored secrets encrypted")
	require.Contains(t, logs.String(), "encrypted=2", "the signing secret and the token")
	status, _, ev := g.do(t, "POST", "/api/events", "application/cloudevents+json",
		`{"specversion":"1.0","id":"fs-1","source":"/shop","type":"shop.order.created","data":{}}`, nil)
	require.Equal(t, http.StatusCreated, status, "%v", ev)
	rcv.waitFor(t, 1)
	g.waitJob(t, ev["dispatchJobs"].([]any)[0].(map[string]any)["id"].(string), "COMPLETED")
	stop()

	_, _, err = serveAt(t, dataDir, plainEnv, logs)
	require.ErrorContains(t, err, "holds encrypted secrets")
}
