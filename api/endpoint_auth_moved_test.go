package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/router/webhook"
)

// seenTimeout bounds every wait for a delivery.
const seenTimeout = 10 * time.Second

// authSink is a loopback receiver (a target or an OAuth 2.0 token
// endpoint) that reports the Authorization header of every request on
// seen. As a token endpoint it issues "at-<client secret>".
type authSink struct {
	URL  string
	seen chan string
}

func newAuthSink(t *testing.T, tokenEndpoint bool) *authSink {
	t.Helper()
	s := &authSink{seen: make(chan string, 16)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.seen <- r.Header.Get("Authorization")
		if !tokenEndpoint {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		_, secret, _ := r.BasicAuth()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at-" + secret, "token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// next waits for the next request's Authorization header.
func (s *authSink) next(t *testing.T) string {
	t.Helper()
	select {
	case h := <-s.seen:
		return h
	case <-time.After(seenTimeout):
		require.FailNow(t, "no request within "+seenTimeout.String())
		return ""
	}
}

// requireNothing fails when the sink got a request. Called after the
// delivery of the only job has been seen elsewhere, it needs no wait.
func (s *authSink) requireNothing(t *testing.T) {
	t.Helper()
	require.Empty(t, s.seen, "no request may reach this receiver")
}

// newDeliveringServer is newTestServer with client keys and a router that
// delivers its jobs over a real webhook transport (private targets
// allowed), as cmd/hooklane wires it; the router stops in t.Cleanup. The
// client acme and the event type shop.order.created exist.
func newDeliveringServer(t *testing.T) *testServer {
	t.Helper()
	s := newTestServer(t, withClientKeys(t))
	hooks := webhook.New(webhook.Config{AllowPrivateTargets: true, UserAgent: "hooklane/test"})
	rt := router.New(router.Config{
		Queue: s.Queue, Store: s.Store, Subscriptions: s.Subs, Lifecycle: s.Config.Jobs.(*dispatch.Lifecycle),
		Pools: router.NewPools(s.Store), Transport: hooks, WorkerID: "test:1", ReceiveWait: 100 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = rt.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		hooks.Close()
	})
	mustCreateClient(t, s, "acme")
	resp, got := s.do(t, http.MethodPost, "/api/event-types", map[string]any{"code": "shop.order.created", "name": "Order created"}, bearer(adminKey)...)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", got)
	return s
}

// orderEvent posts one event of acme, which its one subscription gets.
func orderEvent(t *testing.T, s *testServer, id string) {
	t.Helper()
	resp, got := postEvent(t, s, "k-acme-producer-0123",
		`{"specversion":"1.0","id":"`+id+`","source":"/s","type":"shop.order.created","data":{}}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", got)
	require.Len(t, got["dispatchJobs"], 1)
}

// requireRefusedAt asserts a 422 whose first error is at pointer and that
// quotes none of the secrets.
func requireRefusedAt(t *testing.T, resp *http.Response, got map[string]any, pointer string, secrets ...string) {
	t.Helper()
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v", got)
	errs, _ := got["errors"].([]any)
	require.NotEmpty(t, errs, "%v", got)
	require.Equal(t, pointer, errs[0].(map[string]any)["pointer"], "%v", got)
	b, err := json.Marshal(got)
	require.NoError(t, err)
	for _, s := range secrets {
		require.NotContains(t, string(b), s)
	}
}

// TestStoredBearerTokenFollowsNoNewTarget is issue 28's attack: a
// client-scoped admin PATCHes only the target of a subscription whose
// bearer token the platform set. The PATCH is refused at /auth/token (so
// is "***" with a new target), the next delivery still goes to the old
// target with the platform's token, and the new target never sees it. A
// PATCH that keeps the target keeps "***"; one that gives a token of its
// own moves, and the new target gets that token.
func TestStoredBearerTokenFollowsNoNewTarget(t *testing.T) {
	t.Parallel()
	s := newDeliveringServer(t)
	old, attacker := newAuthSink(t, false), newAuthSink(t, false)
	sub := mustCreateSub(t, s, map[string]any{
		"code": "orders", "clientId": "acme", "target": old.URL + "/hook",
		"auth": map[string]any{"type": "bearer", "token": "platform-token"},
	})
	path := "/api/subscriptions/" + sub["id"].(string)
	acme := bearer("k-acme-admin-0123")

	resp, got := s.do(t, http.MethodPatch, path, map[string]any{"target": attacker.URL + "/collect"}, acme...)
	requireRefusedAt(t, resp, got, "/auth/token", "platform-token")
	resp, got = s.do(t, http.MethodPatch, path, map[string]any{
		"target": attacker.URL + "/collect", "auth": map[string]any{"type": "bearer", "token": "***"},
	}, acme...)
	requireRefusedAt(t, resp, got, "/auth/token", "platform-token")

	// The same target sent back with the mask keeps the token.
	resp, got = s.do(t, http.MethodPatch, path, map[string]any{
		"name": "renamed", "target": old.URL + "/hook", "auth": map[string]any{"type": "bearer", "token": "***"},
	}, acme...)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", got)
	orderEvent(t, s, "e1")
	require.Equal(t, "Bearer platform-token", old.next(t))
	attacker.requireNothing(t)

	// The token given again: the target moves, with that token only.
	resp, got = s.do(t, http.MethodPatch, path, map[string]any{
		"target": attacker.URL + "/collect", "auth": map[string]any{"type": "bearer", "token": "acme-own-token"},
	}, acme...)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", got)
	orderEvent(t, s, "e2")
	require.Equal(t, "Bearer acme-own-token", attacker.next(t))
	old.requireNothing(t)
}

// TestStoredClientSecretFollowsNoNewTokenURL: an oauth2 auth whose
// tokenUrl changes with "clientSecret": "***", or whose target changes
// without auth, is refused at /auth/clientSecret; given again, the new
// token endpoint gets the new secret and the target the token it issued.
func TestStoredClientSecretFollowsNoNewTokenURL(t *testing.T) {
	t.Parallel()
	s := newDeliveringServer(t)
	target, idp, attackerIdp, attacker := newAuthSink(t, false), newAuthSink(t, true), newAuthSink(t, true), newAuthSink(t, false)
	oauth2 := func(tokenURL, secret string) map[string]any {
		return map[string]any{"type": "oauth2", "tokenUrl": tokenURL + "/token", "clientId": "gw", "clientSecret": secret}
	}
	sub := mustCreateSub(t, s, map[string]any{
		"code": "orders", "clientId": "acme", "target": target.URL + "/hook", "auth": oauth2(idp.URL, "platform-client-secret"),
	})
	path := "/api/subscriptions/" + sub["id"].(string)
	acme := bearer("k-acme-admin-0123")

	resp, got := s.do(t, http.MethodPatch, path, map[string]any{"auth": oauth2(attackerIdp.URL, "***")}, acme...)
	requireRefusedAt(t, resp, got, "/auth/clientSecret", "platform-client-secret")
	resp, got = s.do(t, http.MethodPatch, path, map[string]any{"target": attacker.URL + "/collect"}, acme...)
	requireRefusedAt(t, resp, got, "/auth/clientSecret", "platform-client-secret")

	orderEvent(t, s, "e1")
	require.Contains(t, idp.next(t), "Basic ", "the platform's token endpoint, as before")
	require.Equal(t, "Bearer at-platform-client-secret", target.next(t))
	attackerIdp.requireNothing(t)
	attacker.requireNothing(t)

	resp, got = s.do(t, http.MethodPatch, path, map[string]any{"auth": oauth2(attackerIdp.URL, "acme-client-secret")}, acme...)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", got)
	orderEvent(t, s, "e2")
	require.Contains(t, attackerIdp.next(t), "Basic ")
	require.Equal(t, "Bearer at-acme-client-secret", target.next(t))
	idp.requireNothing(t)
}

// TestStoredPasswordFollowsNoNewTarget: basic credentials too: a new
// target without the password again is refused at /auth/password.
func TestStoredPasswordFollowsNoNewTarget(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withClientKeys(t))
	mustCreateClient(t, s, "acme")
	sub := mustCreateSub(t, s, map[string]any{
		"code": "orders", "clientId": "acme", "auth": map[string]any{"type": "basic", "username": "gw", "password": "platform-password"},
	})
	path := "/api/subscriptions/" + sub["id"].(string)
	acme := bearer("k-acme-admin-0123")
	for _, patch := range []map[string]any{
		{"target": "http://127.0.0.1:9/collect"},
		{"target": "http://127.0.0.1:9/collect", "auth": map[string]any{"type": "basic", "username": "gw", "password": "***"}},
	} {
		resp, got := s.do(t, http.MethodPatch, path, patch, acme...)
		requireRefusedAt(t, resp, got, "/auth/password", "platform-password")
	}
	stored, err := s.Store.SubscriptionGetByID(t.Context(), sub["id"].(string))
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:9/hook", stored.Target, "nothing stored")

	resp, got := s.do(t, http.MethodPatch, path, map[string]any{
		"target": "http://127.0.0.1:9/collect", "auth": map[string]any{"type": "basic", "username": "gw", "password": "acme-password"},
	}, acme...)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", got)
}
