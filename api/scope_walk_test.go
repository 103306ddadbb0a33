package api_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/api"
	"github.com/hooklane/hooklane/stream"
)

// Markers that only the platform's and acme's objects hold: no answer to
// another client may contain them.
const (
	acmeMarker     = "ACME-PRIVATE-7f3a"
	platformMarker = "PLATFORM-PRIVATE-9c1e"
)

// isolationFixture is a gateway holding objects of acme and of the
// platform, and credentials of globex.
type isolationFixture struct {
	s *testServer
	// ids maps a route prefix to the object ids to try in its :id.
	ids                      map[string][]string
	acmeSub, acmeToken       string
	acmeSecret, acmeJob      string
	globexToken, globexAdmin string
}

func newIsolationFixture(t *testing.T) *isolationFixture {
	t.Helper()
	hub := stream.NewHub(stream.HubConfig{})
	s := newTestServer(t, func(c *serverConfig) {
		withClientKeys(t)(c)
		c.Stream = api.StreamConfig{Hub: hub, Retry: 50 * time.Millisecond, PingInterval: time.Minute}
	})
	tailer := stream.NewTailer(stream.TailerConfig{Store: s.Store, Hub: hub, PollInterval: 50 * time.Millisecond, Settle: testSettle})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tailer.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		hub.Close()
	})
	a := bearer(adminKey)
	resp, got := s.do(t, http.MethodPost, "/api/event-types", map[string]any{"code": "shop.order.created", "name": "Order created"}, a...)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", got)
	mustCreateClient(t, s, "acme")
	mustCreateClient(t, s, "globex")
	resp, pool := s.do(t, http.MethodPost, "/api/dispatch-pools", map[string]any{"code": "private-pool", "name": platformMarker, "concurrency": 2}, a...)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", pool)
	acmeSub := mustCreateSub(t, s, map[string]any{"code": "acme-" + acmeMarker, "clientId": "acme", "name": acmeMarker, "headers": map[string]string{"X-Acme": acmeMarker}})
	platformSub := mustCreateSub(t, s, map[string]any{"code": "platform-" + platformMarker, "name": platformMarker})
	resp, acmeEv := postEvent(t, s, "k-acme-producer-0123", `{"specversion":"1.0","id":"a1","source":"/acme","type":"shop.order.created","data":{"note":"`+acmeMarker+`"}}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", acmeEv)
	resp, platEv := postEvent(t, s, adminKey, `{"specversion":"1.0","id":"p1","source":"/platform","type":"shop.order.created","data":{"note":"`+platformMarker+`"}}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", platEv)
	resp, jobs := s.do(t, http.MethodGet, "/api/dispatch-jobs?limit=500", nil, a...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var jobIDs []string
	acmeJob := ""
	for _, j := range jobs["items"].([]any) {
		jm := j.(map[string]any)
		jobIDs = append(jobIDs, jm["id"].(string))
		if jm["subscriptionId"] == acmeSub["id"] {
			acmeJob = jm["id"].(string)
		}
	}
	require.Len(t, jobIDs, 3, "acme's event: acme's and the platform's job; the platform's event: one")
	require.NotEmpty(t, acmeJob)
	// A replay of acme's subscription and one of the platform's: the walk
	// tries both at /api/replays/:id.
	resp, acmeReplay := s.do(t, http.MethodPost, "/api/subscriptions/"+acmeSub["id"].(string)+"/replay", map[string]any{"since": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}, a...)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "%v", acmeReplay)
	resp, platReplay := s.do(t, http.MethodPost, "/api/subscriptions/"+platformSub["id"].(string)+"/replay", map[string]any{"since": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}, a...)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "%v", platReplay)
	resp, at := s.do(t, http.MethodPost, "/api/clients/acme/tokens", map[string]any{"role": "admin"}, a...)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	resp, gt := s.do(t, http.MethodPost, "/api/clients/globex/tokens", map[string]any{"role": "admin"}, a...)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	f := &isolationFixture{
		s: s,
		ids: map[string][]string{
			"/api/subscriptions/":  {acmeSub["id"].(string), platformSub["id"].(string)},
			"/api/dispatch-jobs/":  jobIDs,
			"/api/events/":         {acmeEv["id"].(string), platEv["id"].(string)},
			"/api/clients/":        {"acme"},
			"/api/dispatch-pools/": {pool["id"].(string)},
			"/api/replays/":        {acmeReplay["id"].(string), platReplay["id"].(string)},
		},
		acmeSub: acmeSub["id"].(string), acmeToken: at["id"].(string), acmeSecret: acmeSub["secret"].(string),
		acmeJob: acmeJob, globexToken: gt["token"].(string), globexAdmin: "k-globex-admin-0123",
	}
	// The stream replays up to what the tailer has seen: wait until an
	// unscoped stream shows the fixture's messages, so the walk's stream
	// requests have something to leak.
	require.Eventually(t, func() bool {
		_, body := f.fetch(t, http.MethodGet, "/api/stream?since=2000-01-01T00:00:00Z", adminKey)
		return strings.Contains(body, acmeMarker) && strings.Contains(body, platformMarker)
	}, 60*time.Second, 10*time.Millisecond)
	return f
}

// urls returns the concrete URLs to try for a route template.
func (f *isolationFixture) urls(path string) []string {
	ids := []string{f.acmeSub} // a route added later under another prefix still gets an object id of acme
	for prefix, v := range f.ids {
		if strings.HasPrefix(path, prefix) {
			ids = v
		}
	}
	var out []string
	for _, id := range ids {
		u := strings.NewReplacer(":id", id, ":tokenId", f.acmeToken, ":code", "shop.order.created", ":version", "1.0", "*path", "").Replace(path)
		if strings.HasPrefix(path, "/api/stream") || strings.HasPrefix(path, "/api/events") || strings.HasPrefix(path, "/api/dispatch-jobs") || strings.HasPrefix(path, "/api/subscriptions") {
			u += "?since=2000-01-01T00:00:00Z"
		}
		out = append(out, u)
		if !strings.Contains(path, ":") {
			break
		}
	}
	return out
}

// streamWindow is how long fetch and readWS read a stream, which never
// ends by itself: the window in which a leak would show.
const streamWindow = 1500 * time.Millisecond

// fetch sends one request and returns its status and body. Of a stream it
// returns what arrives within streamWindow of its headers, and, when until
// is given, up to the first chunk holding until (for up to a minute: on a
// loaded machine the stream may be slower than the window).
func (f *isolationFixture) fetch(t *testing.T, method, url, key string, until ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var body io.Reader
	if method != http.MethodGet && method != http.MethodHead {
		body = strings.NewReader("{}")
	}
	req, err := http.NewRequestWithContext(ctx, method, f.s.URL+url, body)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, "%s %s", method, url)
	defer resp.Body.Close()
	var mu sync.Mutex
	found, windowOver := len(until) == 0, false
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		stop := time.AfterFunc(streamWindow, func() {
			mu.Lock()
			defer mu.Unlock()
			windowOver = true
			if found {
				cancel()
			}
		})
		defer stop.Stop()
	}
	var raw strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		raw.Write(buf[:n])
		mu.Lock()
		if !found {
			found = strings.Contains(raw.String(), until[0])
		}
		done := found && windowOver
		mu.Unlock()
		if done || errors.Is(err, io.EOF) || ctx.Err() != nil {
			return resp.StatusCode, raw.String()
		}
		require.NoError(t, err, "%s %s", method, url)
	}
}

// TestScopedKeysSeeNoOtherClient walks every route registered on the
// engine with globex's scoped credentials (a configured scoped admin key
// and an issued admin token), trying acme's and the platform's objects
// wherever a route takes an id, and fails if any answer carries their data
// or changes them. A route added later is walked too: it must be put in
// the scope allowlist (api/scope.go) to answer a scoped key at all.
func TestScopedKeysSeeNoOtherClient(t *testing.T) {
	t.Parallel()
	f := newIsolationFixture(t)
	routes := api.New(f.s.Config).Routes()
	require.NotEmpty(t, routes)
	walked := 0
	for _, r := range routes {
		for _, url := range f.urls(r.Path) {
			for _, key := range []string{f.globexAdmin, f.globexToken} {
				status, body := f.fetch(t, r.Method, url, key)
				walked++
				require.Less(t, status, 500, "%s %s: %s", r.Method, url, body)
				for _, leak := range []string{acmeMarker, platformMarker, f.acmeSecret, `"clientId":"acme"`, `"clientid":"acme"`} {
					require.NotContains(t, body, leak, "%s %s (%d) answered another client's data", r.Method, url, status)
				}
				if strings.Contains(r.Path, ":id") && strings.HasPrefix(r.Path, "/api/") {
					require.Contains(t, []int{http.StatusForbidden, http.StatusNotFound, http.StatusMethodNotAllowed}, status,
						"%s %s names another client's object: %s", r.Method, url, body)
				}
			}
		}
	}
	require.Greater(t, walked, 2*len(routes))

	// Nothing of acme's was changed by the walk (deletes, pauses, rotations, cancels).
	a := bearer(adminKey)
	resp, sub := f.s.do(t, http.MethodGet, "/api/subscriptions/"+f.acmeSub, nil, a...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "ACTIVE", sub["status"])
	resp, sec := f.s.do(t, http.MethodGet, "/api/subscriptions/"+f.acmeSub+"/secret", nil, a...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Len(t, sec["secrets"], 1, "not rotated")
	resp, job := f.s.do(t, http.MethodGet, "/api/dispatch-jobs/"+f.acmeJob, nil, a...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotEqual(t, "CANCELLED", job["status"])
	resp, _ = f.s.do(t, http.MethodGet, "/api/clients/acme", nil, a...)
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// The walk can see a leak: acme's own key reads acme's data on the
	// same routes, and so does its stream.
	status, body := f.fetch(t, http.MethodGet, "/api/subscriptions/"+f.acmeSub, "k-acme-admin-0123")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, acmeMarker)
	status, body = f.fetch(t, http.MethodGet, "/api/stream?since=2000-01-01T00:00:00Z", "k-acme-viewer-0123", acmeMarker)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, acmeMarker, "acme's stream carries its dispatch messages")
	require.NotContains(t, body, platformMarker, "but not the platform's")
	// Naming another client in a filter is a 403.
	status, _ = f.fetch(t, http.MethodGet, "/api/stream?clients=acme", "k-globex-viewer-0123")
	require.Equal(t, http.StatusForbidden, status)
	status, _ = f.fetch(t, http.MethodGet, "/api/subscriptions?clientId=acme", "k-globex-viewer-0123")
	require.Equal(t, http.StatusForbidden, status)
	// acme reads its own replay.
	status, body = f.fetch(t, http.MethodGet, "/api/replays/"+f.ids["/api/replays/"][0], "k-acme-viewer-0123")
	require.Equal(t, http.StatusOK, status, body)
}

// readWS reads the connection's messages for streamWindow, and on until
// each of want arrived (for up to a minute), and returns them joined, as
// raw JSON.
func readWS(t *testing.T, conn *websocket.Conn, want ...string) string {
	t.Helper()
	windowEnd := time.Now().Add(streamWindow)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var b strings.Builder
	for {
		rctx, cancelRead := ctx, context.CancelFunc(func() {})
		if !slices.ContainsFunc(want, func(w string) bool { return !strings.Contains(b.String(), w) }) {
			rctx, cancelRead = context.WithDeadline(ctx, windowEnd)
		}
		_, data, err := conn.Read(rctx)
		cancelRead()
		if err != nil {
			return b.String()
		}
		b.Write(data)
		b.WriteString("\n")
	}
}

// TestScopedWebSocketSeesOnlyItsClient: the WebSocket stream of a scoped
// key carries only its client's messages, and a filter naming another
// client is refused.
func TestScopedWebSocketSeesOnlyItsClient(t *testing.T) {
	t.Parallel()
	f := newIsolationFixture(t)
	dial := func(key string) *websocket.Conn {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(f.s.URL, "http")+"/api/stream/ws",
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.CloseNow() })
		return conn
	}
	since := map[string]any{"since": "2000-01-01T00:00:00Z"}

	globex := dial(f.globexToken)
	wsSend(t, globex, map[string]any{"action": "subscribe", "subscriptionId": "other", "filters": map[string]any{"clients": "acme", "since": since["since"]}})
	// A filter named in another case is refused, not taken for clients.
	wsSend(t, globex, map[string]any{"action": "subscribe", "subscriptionId": "cased", "filters": map[string]any{"Clients": "acme", "since": since["since"]}})
	wsSend(t, globex, map[string]any{"action": "subscribe", "subscriptionId": "all", "filters": since})
	got := readWS(t, globex, `"subscriptionId":"other","error":"forbidden`, `"subscriptionId":"cased","error":"unknown member /filters/Clients`,
		`"subscriptionId":"all","status":"subscribed"`)
	require.Contains(t, got, `"subscriptionId":"other","error":"forbidden`)
	require.Contains(t, got, `"subscriptionId":"all","status":"subscribed"`)
	require.Contains(t, got, `"subscriptionId":"cased","error":"unknown member /filters/Clients`)
	for _, leak := range []string{acmeMarker, platformMarker} {
		require.NotContains(t, got, leak)
	}

	acme := dial("k-acme-viewer-0123")
	wsSend(t, acme, map[string]any{"action": "subscribe", "subscriptionId": "all", "filters": since})
	got = readWS(t, acme, acmeMarker)
	require.Contains(t, got, acmeMarker, "acme's stream carries its messages")
	require.NotContains(t, got, platformMarker, "but not the platform's")
}
