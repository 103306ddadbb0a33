package api_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/api"
	"github.com/hooklane/hooklane/dispatch/clocktest"
	"github.com/hooklane/hooklane/stream"
)

// streamEndWait is how long a test waits for a stream to end: generous
// (a loaded 2-core machine under -race); the bound under test is the
// recheck interval the test sets, far below it, and on today's code the
// stream never ends at all.
const streamEndWait = 30 * time.Second

// authStream is a stream server (hub, tailer) whose configuration the test
// edits, with the client acme and helpers for its tokens.
type authStream struct {
	*streamBundle
}

func setupAuthStream(t *testing.T, edit func(*serverConfig)) *authStream {
	t.Helper()
	hub := stream.NewHub(stream.HubConfig{})
	ts := newTestServer(t, func(c *serverConfig) {
		c.Stream = api.StreamConfig{Hub: hub, Retry: 50 * time.Millisecond, PingInterval: time.Minute, AuthRecheck: 20 * time.Millisecond}
		if edit != nil {
			edit(c)
		}
	})
	startTailer(t, ts.Store, hub)
	return &authStream{&streamBundle{ts: ts, hub: hub}}
}

// startTailer runs a tailer of st into hub until the test ends.
func startTailer(t *testing.T, st stream.Reader, hub *stream.Hub) {
	t.Helper()
	tailer := stream.NewTailer(stream.TailerConfig{Store: st, Hub: hub, PollInterval: 50 * time.Millisecond, Settle: testSettle})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tailer.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		hub.Close()
	})
}

// createClient creates the client acme with the given headers (an admin key's).
func createClient(t *testing.T, ts *testServer, headers ...string) {
	t.Helper()
	const id = "acme"
	resp, got := ts.do(t, http.MethodPost, "/api/clients", map[string]any{"id": id, "name": id}, headers...)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", got)
}

// issueToken issues a viewer token of acme and returns it and its id.
func issueToken(t *testing.T, ts *testServer, headers ...string) (token, id string) {
	t.Helper()
	const clientID = "acme"
	resp, got := ts.do(t, http.MethodPost, "/api/clients/"+clientID+"/tokens", map[string]any{"role": "viewer", "ttlSeconds": 60}, headers...)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", got)
	return got["token"].(string), got["id"].(string)
}

// rawSSE is an SSE response read line by line, without reconnection: lines
// is closed when the server ends the response.
type rawSSE struct {
	lines chan string
	mu    sync.Mutex
	all   []string
}

// openSSE opens GET base/api/stream with the bearer key and requires 200.
func openSSE(t *testing.T, base, key string) *rawSSE {
	t.Helper()
	resp, err := getStream(t, base+"/api/stream", key)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	r := &rawSSE{lines: make(chan string, 1<<12)}
	go func() {
		defer close(r.lines)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			r.mu.Lock()
			r.all = append(r.all, sc.Text())
			r.mu.Unlock()
			r.lines <- sc.Text()
		}
	}()
	return r
}

// getStream sends GET url with the bearer key; the request ends with the
// test.
func getStream(t *testing.T, url, key string) (*http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", url, err)
	}
	return resp, nil
}

// waitConnected waits for the stream's first comment.
func (r *rawSSE) waitConnected(t *testing.T) {
	t.Helper()
	const want = ": connected"
	deadline := time.After(streamEndWait)
	for {
		select {
		case l, ok := <-r.lines:
			require.True(t, ok, "the stream ended before a line with %q", want)
			if strings.Contains(l, want) {
				return
			}
		case <-deadline:
			t.Fatalf("no line with %q", want)
		}
	}
}

// waitEnd waits until the server ends the response and returns its last
// comment line.
func (r *rawSSE) waitEnd(t *testing.T) string {
	t.Helper()
	deadline := time.After(streamEndWait)
	for {
		select {
		case _, ok := <-r.lines:
			if !ok {
				r.mu.Lock()
				defer r.mu.Unlock()
				last := ""
				for _, l := range r.all {
					if strings.HasPrefix(l, ":") {
						last = l
					}
				}
				return last
			}
		case <-deadline:
			t.Fatal("the stream is still open")
		}
	}
}

func TestStreamEndsWhenItsTokenIsRevoked(t *testing.T) {
	t.Parallel()
	b := setupAuthStream(t, nil)
	createClient(t, b.ts)
	token, id := issueToken(t, b.ts)
	s := openSSE(t, b.ts.URL, token)
	s.waitConnected(t)
	b.waitClients(t, 1)
	resp, _ := b.ts.do(t, http.MethodDelete, "/api/clients/acme/tokens/"+id, nil)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Contains(t, s.waitEnd(t), "unknown or revoked token")
	b.waitClients(t, 0)
	resp, err := getStream(t, b.ts.URL+"/api/stream", token)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "and it cannot reconnect")
}

func TestStreamEndsAtItsTokensExpiry(t *testing.T) {
	t.Parallel()
	clock := clocktest.New(time.Now())
	b := setupAuthStream(t, func(c *serverConfig) {
		c.NowFunc = clock.Now
		// No recheck within the test: only the expiry timer can end it.
		c.Stream.AuthRecheck = time.Hour
	})
	createClient(t, b.ts)
	token, _ := issueToken(t, b.ts) // 60 s
	// 200 ms of real time before the token's expiry when the stream opens.
	clock.Advance(60*time.Second - 200*time.Millisecond)
	s := openSSE(t, b.ts.URL, token)
	s.waitConnected(t)
	require.Contains(t, s.waitEnd(t), "the token expired at")
}

func TestStreamEndsWhenItsTokenExpiresOnTheInjectedClock(t *testing.T) {
	t.Parallel()
	clock := clocktest.New(time.Now())
	b := setupAuthStream(t, func(c *serverConfig) { c.NowFunc = clock.Now })
	createClient(t, b.ts)
	token, _ := issueToken(t, b.ts)
	s := openSSE(t, b.ts.URL, token)
	s.waitConnected(t)
	// The store's read at the next recheck finds the token expired.
	clock.Advance(time.Hour)
	require.Contains(t, s.waitEnd(t), "the token expired at")
}

func TestStreamOfAScopedKeyEndsWhenItsClientIsDeleted(t *testing.T) {
	t.Parallel()
	keys, err := api.ParseKeys("admin:admin:k-admin-0123456789,acme-view:viewer:k-acme-view-0123:acme,acme-view2:viewer:k-acme-view2-0123:acme")
	require.NoError(t, err)
	b := setupAuthStream(t, func(c *serverConfig) { c.Keys = keys })
	admin := bearer("k-admin-0123456789")
	createClient(t, b.ts, admin...)
	token, _ := issueToken(t, b.ts, admin...)
	byKey := openSSE(t, b.ts.URL, "k-acme-view-0123")
	byToken := openSSE(t, b.ts.URL, token)
	byKey.waitConnected(t)
	byToken.waitConnected(t)
	resp, _ := b.ts.do(t, http.MethodDelete, "/api/clients/acme", nil, admin...)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Contains(t, byKey.waitEnd(t), `the client "acme" of this key does not exist`)
	require.Contains(t, byToken.waitEnd(t), "unknown or revoked token")
}

// A SUSPENDED client's token still authenticates on REST (its reads go on;
// only its events are refused, API.md §11), so its stream goes on too.
func TestStreamOfASuspendedClientGoesOnAsItsRESTCallsDo(t *testing.T) {
	t.Parallel()
	b := setupAuthStream(t, nil)
	createClient(t, b.ts)
	kept, _ := issueToken(t, b.ts)
	probe, probeID := issueToken(t, b.ts)
	s := openSSE(t, b.ts.URL, kept)
	s.waitConnected(t)
	resp, _ := b.ts.do(t, http.MethodPatch, "/api/clients/acme", map[string]any{"status": "SUSPENDED"})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, got := b.ts.do(t, http.MethodGet, "/api/auth/whoami", nil, bearer(kept)...)
	require.Equal(t, http.StatusOK, resp.StatusCode, "REST: a suspended client's token authenticates: %v", got)
	// A second stream opened after the first and revoked: once it ended,
	// the first (same recheck interval, started earlier) was checked after
	// the suspension too.
	p := openSSE(t, b.ts.URL, probe)
	p.waitConnected(t)
	resp, _ = b.ts.do(t, http.MethodDelete, "/api/clients/acme/tokens/"+probeID, nil)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	p.waitEnd(t)
	require.Equal(t, 1, b.hub.Clients(), "the suspended client's stream is still open")
}

// dialWSKey opens the WebSocket stream with a bearer key.
func dialWSKey(t *testing.T, base, key string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := http.Header{}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/api/stream/ws", &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		return nil, resp, fmt.Errorf("dial: %w", err)
	}
	t.Cleanup(func() { _ = conn.CloseNow() })
	return conn, resp, nil
}

// wsClosed reads until the connection closes and returns its close error.
func wsClosed(t *testing.T, conn *websocket.Conn) websocket.CloseError {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), streamEndWait)
	defer cancel()
	for {
		_, _, err := conn.Read(ctx)
		if err == nil {
			continue
		}
		var ce websocket.CloseError
		require.ErrorAs(t, err, &ce, "the connection ended without a close frame: %v", err)
		return ce
	}
}

func TestStreamWebSocketSubscribeAfterRevocationIsRefused(t *testing.T) {
	t.Parallel()
	// No recheck within the test: the subscribe's own authentication refuses.
	b := setupAuthStream(t, func(c *serverConfig) { c.Stream.AuthRecheck = time.Hour })
	createClient(t, b.ts)
	token, id := issueToken(t, b.ts)
	conn, _, err := dialWSKey(t, b.ts.URL, token)
	require.NoError(t, err)
	wsSend(t, conn, map[string]any{"action": "subscribe", "subscriptionId": "s1"})
	require.Equal(t, "subscribed", wsRead(t, conn).Status)
	resp, _ := b.ts.do(t, http.MethodDelete, "/api/clients/acme/tokens/"+id, nil)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	wsSend(t, conn, map[string]any{"action": "subscribe", "subscriptionId": "s2", "filters": map[string]any{"since": "2000-01-01T00:00:00Z"}})
	m := wsRead(t, conn)
	require.Equal(t, "s2", m.SubscriptionID)
	require.Contains(t, m.Error, "unauthorized: unknown or revoked token")
	require.Empty(t, m.Status)
	ce := wsClosed(t, conn)
	require.Equal(t, websocket.StatusPolicyViolation, ce.Code)
	require.Contains(t, ce.Reason, "unknown or revoked token")
}

func TestStreamWebSocketEndsWhenItsTokenIsRevoked(t *testing.T) {
	t.Parallel()
	b := setupAuthStream(t, nil)
	createClient(t, b.ts)
	token, id := issueToken(t, b.ts)
	conn, _, err := dialWSKey(t, b.ts.URL, token)
	require.NoError(t, err)
	wsSend(t, conn, map[string]any{"action": "subscribe", "subscriptionId": "s1"})
	require.Equal(t, "subscribed", wsRead(t, conn).Status)
	resp, _ := b.ts.do(t, http.MethodDelete, "/api/clients/acme/tokens/"+id, nil)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	ce := wsClosed(t, conn)
	require.Equal(t, websocket.StatusPolicyViolation, ce.Code)
	require.Equal(t, "unauthorized: unknown or revoked token", ce.Reason)
}

// Two API instances over one store: the token is revoked through A, and
// B's stream, which shares nothing with A but the store, ends.
func TestStreamRevokedOnOneInstanceEndsOnTheOther(t *testing.T) {
	t.Parallel()
	a := setupAuthStream(t, nil)
	hubB := stream.NewHub(stream.HubConfig{})
	cfgB := a.ts.Config
	cfgB.Stream = api.StreamConfig{Hub: hubB, Retry: 50 * time.Millisecond, PingInterval: time.Minute, AuthRecheck: 20 * time.Millisecond}
	srvB := httptest.NewServer(api.New(cfgB).Handler())
	t.Cleanup(srvB.Close)
	startTailer(t, a.ts.Store, hubB)

	createClient(t, a.ts)
	token, id := issueToken(t, a.ts)
	sse := openSSE(t, srvB.URL, token)
	sse.waitConnected(t)
	conn, _, err := dialWSKey(t, srvB.URL, token)
	require.NoError(t, err)
	resp, _ := a.ts.do(t, http.MethodDelete, "/api/clients/acme/tokens/"+id, nil)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Contains(t, sse.waitEnd(t), "unknown or revoked token")
	require.Equal(t, websocket.StatusPolicyViolation, wsClosed(t, conn).Code)
}

func TestStreamsPerKeyAreCapped(t *testing.T) {
	t.Parallel()
	b := setupAuthStream(t, func(c *serverConfig) { c.Stream.MaxPerKey = 2 })
	createClient(t, b.ts)
	token, _ := issueToken(t, b.ts)
	other, _ := issueToken(t, b.ts)
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.ts.URL+"/api/stream", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	first, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, first.StatusCode)
	conn, _, err := dialWSKey(t, b.ts.URL, token) // a WebSocket counts too
	require.NoError(t, err)

	resp, err := getStream(t, b.ts.URL+"/api/stream", token)
	require.NoError(t, err)
	requireTooMany(t, resp)
	_, resp, err = dialWSKey(t, b.ts.URL, token)
	require.Error(t, err)
	requireTooMany(t, resp)
	openSSE(t, b.ts.URL, other).waitConnected(t) // another token has its own count

	// A stream given back makes room.
	cancel()
	require.NoError(t, first.Body.Close())
	require.NoError(t, conn.Close(websocket.StatusNormalClosure, "bye"))
	b.waitClients(t, 1)
	// The hub forgets a client before its handler returns and gives the
	// key's count back: room comes a moment after, not at once.
	require.Eventually(t, func() bool {
		resp, err := getStream(t, b.ts.URL+"/api/stream", token)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 10*time.Millisecond, "the streams given back made no room")
}

func TestStreamsPerKeyDefaultCap(t *testing.T) {
	t.Parallel()
	b := setupAuthStream(t, nil)
	createClient(t, b.ts)
	token, _ := issueToken(t, b.ts)
	for range api.StreamMaxPerKeyDefault {
		openSSE(t, b.ts.URL, token).waitConnected(t)
	}
	resp, err := getStream(t, b.ts.URL+"/api/stream", token)
	require.NoError(t, err)
	requireTooMany(t, resp)
}

func requireTooMany(t *testing.T, resp *http.Response) {
	t.Helper()
	require.NotNil(t, resp)
	defer resp.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "application/problem+json", strings.Split(resp.Header.Get("Content-Type"), ";")[0])
	var body strings.Builder
	_, err := bufio.NewReader(resp.Body).WriteTo(&body)
	require.NoError(t, err)
	require.Contains(t, body.String(), "HOOKLANE_MAX_STREAMS_PER_KEY")
}

func TestStreamWebSocketSubscriptionsAreCapped(t *testing.T) {
	t.Parallel()
	b := setupAuthStream(t, func(c *serverConfig) { c.Stream.MaxSubscriptions = 2 })
	conn, _, err := dialWSKey(t, b.ts.URL, "")
	require.NoError(t, err)
	for _, id := range []string{"a", "b"} {
		wsSend(t, conn, map[string]any{"action": "subscribe", "subscriptionId": id})
		require.Equal(t, "subscribed", wsRead(t, conn).Status)
	}
	wsSend(t, conn, map[string]any{"action": "subscribe", "subscriptionId": "c"})
	m := wsRead(t, conn)
	require.Equal(t, "c", m.SubscriptionID)
	require.Contains(t, m.Error, "too many subscriptions")
	// Replacing one is not one more; after an unsubscribe there is room.
	wsSend(t, conn, map[string]any{"action": "subscribe", "subscriptionId": "a", "filters": map[string]any{"types": "dispatch.*"}})
	require.Equal(t, "subscribed", wsRead(t, conn).Status)
	wsSend(t, conn, map[string]any{"action": "unsubscribe", "subscriptionId": "b"})
	require.Equal(t, "unsubscribed", wsRead(t, conn).Status)
	wsSend(t, conn, map[string]any{"action": "subscribe", "subscriptionId": "c"})
	require.Equal(t, "subscribed", wsRead(t, conn).Status)
	// Still usable: c receives.
	e := b.newEvent(stream.TypeDispatchQueued, "job-1", stream.Data{JobID: "job-1"})
	b.write(t, e)
	got := wsEvents(t, conn, 2)
	require.ElementsMatch(t, []string{"a:" + e.ID, "c:" + e.ID}, got)
	require.NoError(t, errors.Join(conn.Close(websocket.StatusNormalClosure, "bye")))
}
