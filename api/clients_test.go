package api_test

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/api"
)

// clientKeys are platform keys and keys scoped to acme and globex.
const clientKeys = "ops:admin:k-admin-0123456789," +
	"acme-admin:admin:k-acme-admin-0123:acme,acme-shop:producer:k-acme-producer-0123:acme,acme-dash:viewer:k-acme-viewer-0123:acme," +
	"globex-admin:admin:k-globex-admin-0123:globex,globex-shop:producer:k-globex-producer-0123:globex,globex-dash:viewer:k-globex-viewer-0123:globex," +
	"ghost:admin:k-ghost-0123456789:ghost"

func withClientKeys(t *testing.T) func(*serverConfig) {
	t.Helper()
	ks, err := api.ParseKeys(clientKeys)
	require.NoError(t, err)
	return func(c *serverConfig) { c.Keys = ks }
}

func bearer(key string) []string { return []string{"Authorization", "Bearer " + key} }

const adminKey = "k-admin-0123456789"

func mustCreateClient(t *testing.T, s *testServer, id string) {
	t.Helper()
	resp, got := s.do(t, http.MethodPost, "/api/clients", map[string]any{"id": id, "name": "Client " + id}, bearer(adminKey)...)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", got)
}

func mustCreateSub(t *testing.T, s *testServer, body map[string]any) map[string]any {
	t.Helper()
	if body["target"] == nil {
		body["target"] = "http://127.0.0.1:9/hook"
	}
	if body["eventTypes"] == nil {
		body["eventTypes"] = []map[string]any{{"eventTypeCode": "shop.order.created"}}
	}
	resp, got := s.do(t, http.MethodPost, "/api/subscriptions", body, bearer(adminKey)...)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", got)
	return got
}

func postEvent(t *testing.T, s *testServer, key, body string) (*http.Response, map[string]any) {
	t.Helper()
	return s.do(t, http.MethodPost, "/api/events", body, append([]string{"Content-Type", "application/cloudevents+json"}, bearer(key)...)...)
}

func jobSubs(body map[string]any) []string {
	var out []string
	jobs, _ := body["dispatchJobs"].([]any)
	for _, j := range jobs {
		out = append(out, j.(map[string]any)["subscription"].(string))
	}
	return out
}

func TestClientsCRUDAndBadInput(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withClientKeys(t))
	a := bearer(adminKey)
	for _, tc := range []struct {
		body    any
		status  int
		pointer string
	}{
		{map[string]any{"id": "bad id", "name": "x"}, 422, "/id"},
		{map[string]any{"id": "-lead", "name": "x"}, 422, "/id"},
		{map[string]any{"id": "a" + fmt.Sprintf("%064d", 0), "name": "x"}, 422, "/id"},
		{map[string]any{"id": "ok"}, 422, "/name"},
		{map[string]any{"id": 5, "name": "x"}, 422, "/id"},
		{`{"id":`, 400, ""},
	} {
		resp, got := s.do(t, http.MethodPost, "/api/clients", tc.body, a...)
		require.Equal(t, tc.status, resp.StatusCode, "%v: %v", tc.body, got)
		require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
		if tc.pointer != "" {
			require.Equal(t, []string{tc.pointer}, pointersOf(got), "%v", tc.body)
		}
	}
	resp, got := s.do(t, http.MethodGet, "/api/clients", nil, a...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, got["items"], "nothing half-created")

	resp, got = s.do(t, http.MethodPost, "/api/clients", map[string]any{"id": "acme", "name": "ACME Corp", "metadata": map[string]string{"plan": "gold"}}, a...)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", got)
	require.Equal(t, "ACTIVE", got["status"])
	require.Equal(t, "/api/clients/acme", resp.Header.Get("Location"))
	resp, _ = s.do(t, http.MethodPost, "/api/clients", map[string]any{"id": "acme", "name": "again"}, a...)
	require.Equal(t, http.StatusConflict, resp.StatusCode)

	resp, got = s.do(t, http.MethodPatch, "/api/clients/acme", map[string]any{"status": "PAUSED"}, a...)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Equal(t, []string{"/status"}, pointersOf(got))
	resp, got = s.do(t, http.MethodPatch, "/api/clients/acme", map[string]any{"name": "ACME", "status": "SUSPENDED"}, a...)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", got)
	require.Equal(t, "SUSPENDED", got["status"])
	require.Equal(t, "ACME", got["name"])
	resp, _ = s.do(t, http.MethodGet, "/api/clients/nope", nil, a...)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	// Subscriptions: an unknown client is 422 at /clientId; the client cannot change.
	resp, got = s.do(t, http.MethodPost, "/api/subscriptions", map[string]any{
		"code": "x", "clientId": "nope", "target": "http://127.0.0.1:9/h", "eventTypes": []map[string]any{{"eventTypeCode": "shop.order.created"}},
	}, a...)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v", got)
	require.Equal(t, []string{"/clientId"}, pointersOf(got))
	resp, got = s.do(t, http.MethodGet, "/api/subscriptions", nil, a...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, got["items"], "no subscription of an unknown client is created")
	sub := mustCreateSub(t, s, map[string]any{"code": "orders", "clientId": "acme"})
	resp, got = s.do(t, http.MethodPatch, "/api/subscriptions/"+sub["id"].(string), map[string]any{"clientId": nil}, a...)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v", got)
	require.Equal(t, []string{"/clientId"}, pointersOf(got))
	resp, _ = s.do(t, http.MethodPatch, "/api/subscriptions/"+sub["id"].(string), map[string]any{"clientId": "acme", "name": "same client"}, a...)
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// Delete cascades to subscriptions and tokens.
	resp, tok := s.do(t, http.MethodPost, "/api/clients/acme/tokens", map[string]any{"role": "viewer"}, a...)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	resp, _ = s.do(t, http.MethodDelete, "/api/clients/acme", nil, a...)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	resp, _ = s.do(t, http.MethodGet, "/api/subscriptions/"+sub["id"].(string), nil, a...)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "its subscriptions are deleted")
	resp, _ = s.do(t, http.MethodGet, "/api/auth/whoami", nil, bearer(tok["token"].(string))...)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "its tokens are deleted")
	resp, _ = s.do(t, http.MethodDelete, "/api/clients/acme", nil, a...)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestClientIngestAndMatching(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withClientKeys(t))
	resp, got := s.do(t, http.MethodPost, "/api/event-types", map[string]any{"code": "shop.order.created", "name": "Order created"}, bearer(adminKey)...)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", got)
	mustCreateClient(t, s, "acme")
	mustCreateClient(t, s, "globex")
	mustCreateSub(t, s, map[string]any{"code": "platform"})
	mustCreateSub(t, s, map[string]any{"code": "acme-hook", "clientId": "acme"})
	mustCreateSub(t, s, map[string]any{"code": "globex-hook", "clientId": "globex"})

	resp, got = postEvent(t, s, adminKey, `{"specversion":"1.0","id":"e1","source":"/s","type":"shop.order.created","clientid":"acme","data":{}}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", got)
	require.ElementsMatch(t, []string{"platform", "acme-hook"}, jobSubs(got), "the client's and the anchor-level subscriptions")
	resp, got = postEvent(t, s, adminKey, `{"specversion":"1.0","id":"e2","source":"/s","type":"shop.order.created","data":{}}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	require.Equal(t, []string{"platform"}, jobSubs(got), "no client: anchor-level only")

	// A scoped producer's event is its client's; another clientid is 403;
	// the same id from another client is no duplicate.
	resp, got = postEvent(t, s, "k-globex-producer-0123", `{"specversion":"1.0","id":"e1","source":"/s","type":"shop.order.created","data":{}}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", got)
	require.Equal(t, false, got["duplicate"])
	require.Equal(t, "globex", got["event"].(map[string]any)["clientid"])
	require.Equal(t, []string{"globex-hook"}, jobSubs(got), "the platform's job is not shown to the client")
	resp, got = postEvent(t, s, "k-globex-producer-0123", `{"specversion":"1.0","id":"e3","source":"/s","type":"shop.order.created","clientid":"acme","data":{}}`)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "%v", got)

	// Bad client ids: 422 at /clientid (/i/clientid in a batch); nothing stored.
	for _, tc := range []struct{ body, ctype, pointer string }{
		{`{"specversion":"1.0","id":"b1","source":"/s","type":"shop.order.created","clientid":"nope","data":{}}`, "application/cloudevents+json", "/clientid"},
		{`{"specversion":"1.0","id":"b2","source":"/s","type":"shop.order.created","clientid":"bad id!","data":{}}`, "application/cloudevents+json", "/clientid"},
		{`[{"specversion":"1.0","id":"b3","source":"/s","type":"shop.order.created","data":{}},{"specversion":"1.0","id":"b4","source":"/s","type":"shop.order.created","clientid":"nope","data":{}}]`, "application/cloudevents-batch+json", "/1/clientid"},
	} {
		resp, got := s.do(t, http.MethodPost, "/api/events", tc.body, append([]string{"Content-Type", tc.ctype}, bearer(adminKey)...)...)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%s: %v", tc.body, got)
		require.Equal(t, []string{tc.pointer}, pointersOf(got), tc.body)
	}
	resp, got = s.do(t, http.MethodGet, "/api/events?source=/s&limit=500", nil, bearer(adminKey)...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Len(t, got["items"], 3, "no event of a refused request is stored")

	// Suspension: events refused at /clientid; reactivation accepts again.
	resp, _ = s.do(t, http.MethodPatch, "/api/clients/acme", map[string]any{"status": "SUSPENDED"}, bearer(adminKey)...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, got = postEvent(t, s, "k-acme-producer-0123", `{"specversion":"1.0","id":"s1","source":"/s","type":"shop.order.created","data":{}}`)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v", got)
	require.Equal(t, []string{"/clientid"}, pointersOf(got))
	resp, _ = s.do(t, http.MethodPatch, "/api/clients/acme", map[string]any{"status": "ACTIVE"}, bearer(adminKey)...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, _ = postEvent(t, s, "k-acme-producer-0123", `{"specversion":"1.0","id":"s1","source":"/s","type":"shop.order.created","data":{}}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode)

	// Lists take ?clientId=.
	resp, got = s.do(t, http.MethodGet, "/api/events?clientId=globex", nil, bearer(adminKey)...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Len(t, got["items"], 1)
	resp, got = s.do(t, http.MethodGet, "/api/dispatch-jobs?clientId=acme", nil, bearer(adminKey)...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Len(t, got["items"], 2, "the jobs of acme's subscription")
	resp, got = s.do(t, http.MethodGet, "/api/subscriptions?clientId=acme", nil, bearer(adminKey)...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Len(t, got["items"], 1)
}

func TestClientTokens(t *testing.T) {
	t.Parallel()
	var now atomic.Int64
	now.Store(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC).UnixMilli())
	s := newTestServer(t, func(c *serverConfig) {
		withClientKeys(t)(c)
		c.NowFunc = func() time.Time { return time.UnixMilli(now.Load()).UTC() }
	})
	a := bearer(adminKey)
	mustCreateClient(t, s, "acme")
	for _, tc := range []struct {
		body    map[string]any
		pointer string
	}{
		{map[string]any{"role": "worker"}, "/role"},
		{map[string]any{"role": "viewer", "ttlSeconds": 59}, "/ttlSeconds"},
		{map[string]any{"role": "viewer", "ttlSeconds": 2592001}, "/ttlSeconds"},
	} {
		resp, got := s.do(t, http.MethodPost, "/api/clients/acme/tokens", tc.body, a...)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v", got)
		require.Equal(t, []string{tc.pointer}, pointersOf(got))
	}
	resp, _ := s.do(t, http.MethodPost, "/api/clients/nope/tokens", map[string]any{"role": "viewer"}, a...)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = s.do(t, http.MethodPost, "/api/clients/acme/tokens", map[string]any{"role": "viewer"}, bearer("k-acme-admin-0123")...)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "scoped keys may not issue tokens, even for their client")

	resp, tok := s.do(t, http.MethodPost, "/api/clients/acme/tokens", map[string]any{"role": "viewer", "ttlSeconds": 120, "name": "portal"}, a...)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", tok)
	token := tok["token"].(string)
	require.Regexp(t, `^hlt_`, token)
	require.Equal(t, "2026-11-23T12:02:00.000Z", tok["expiresAt"])
	resp, got := s.do(t, http.MethodGet, "/api/clients/acme/tokens", nil, a...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Len(t, got["items"], 1)
	require.NotContains(t, fmt.Sprint(got), token, "listed without the token")

	resp, got = s.do(t, http.MethodGet, "/api/auth/whoami", nil, bearer(token)...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "acme", got["clientId"])
	require.Equal(t, "viewer", got["role"])
	require.Equal(t, "Client acme", got["client"].(map[string]any)["name"])
	resp, _ = s.do(t, http.MethodPost, "/api/subscriptions", map[string]any{"code": "x"}, bearer(token)...)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a viewer token cannot write")

	now.Add((2 * time.Minute).Milliseconds())
	resp, _ = s.do(t, http.MethodGet, "/api/auth/whoami", nil, bearer(token)...)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "expired")

	resp, tok = s.do(t, http.MethodPost, "/api/clients/acme/tokens", map[string]any{"role": "admin"}, a...)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	resp, _ = s.do(t, http.MethodGet, "/api/subscriptions", nil, bearer(tok["token"].(string))...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, _ = s.do(t, http.MethodDelete, "/api/clients/acme/tokens/"+tok["id"].(string), nil, a...)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	resp, _ = s.do(t, http.MethodGet, "/api/subscriptions", nil, bearer(tok["token"].(string))...)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "revoked at once")
	resp, _ = s.do(t, http.MethodDelete, "/api/clients/acme/tokens/"+tok["id"].(string), nil, a...)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	resp, _ = s.do(t, http.MethodGet, "/api/auth/whoami", nil, bearer("k-ghost-0123456789")...)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a scoped key of a client that does not exist")
	resp, _ = s.do(t, http.MethodGet, "/api/auth/whoami", nil, bearer("hlt_forged")...)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

// With no API keys configured, a request that carries a token is scoped
// by it.
func TestClientTokenWithoutKeys(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	resp, _ := s.do(t, http.MethodPost, "/api/clients", map[string]any{"id": "acme", "name": "ACME"})
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	resp, tok := s.do(t, http.MethodPost, "/api/clients/acme/tokens", map[string]any{"role": "viewer"})
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	resp, _ = s.do(t, http.MethodGet, "/api/dispatch-pools", nil, bearer(tok["token"].(string))...)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	resp, _ = s.do(t, http.MethodGet, "/api/dispatch-pools", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, _ = s.do(t, http.MethodGet, "/api/dispatch-pools", nil, bearer("hlt_unknown")...)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

func TestClientMetricsAreCounted(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	resp, _ := s.do(t, http.MethodPost, "/api/event-types", map[string]any{"code": "shop.order.created", "name": "Order created"})
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	resp, _ = s.do(t, http.MethodPost, "/api/clients", map[string]any{"id": "acme", "name": "ACME"})
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	for range 2 {
		resp, _ = s.do(t, http.MethodPost, "/api/events", `{"specversion":"1.0","id":"m1","source":"/s","type":"shop.order.created","clientid":"acme","data":{}}`, "Content-Type", "application/cloudevents+json")
		require.Less(t, resp.StatusCode, 300)
	}
	resp, _ = s.do(t, http.MethodPatch, "/api/clients/acme", map[string]any{"status": "SUSPENDED"})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, _ = s.do(t, http.MethodPost, "/api/events", `{"specversion":"1.0","id":"m2","source":"/s","type":"shop.order.created","clientid":"acme","data":{}}`, "Content-Type", "application/cloudevents+json")
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	resp, _ = s.do(t, http.MethodGet, "/metrics", nil)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, line := range []string{
		`hooklane_client_events_total{client="acme",outcome="accepted"} 1`,
		`hooklane_client_events_total{client="acme",outcome="duplicate"} 1`,
		`hooklane_client_events_total{client="acme",outcome="refused"} 1`,
	} {
		require.Contains(t, string(body), line)
	}
}
