package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/api"
)

// caseVariants are bodies that name a subscription's scope-bearing or
// immutable members in another case. encoding/json would take each for the
// real member; every one must be refused.
func caseVariants(otherClient string) []map[string]any {
	return []map[string]any{
		{"ClientId": nil},
		{"ClientId": otherClient},
		{"clientID": otherClient},
		{"CLIENTID": nil},
		{"clientid": otherClient},
		{"ID": "01JD0000000000000000000000"},
		{"Id": "01JD0000000000000000000000"},
		{"CreatedAt": "2020-01-01T00:00:00.000Z"},
	}
}

// TestPatchCannotMoveASubscriptionThroughACaseVariant is issue 28's first
// hole: PATCH {"ClientId": null} moved a client's subscription to anchor
// level (every client's events then reached its target). Every case
// variant of a scope-bearing or immutable member is a 422 at its pointer,
// for a client-scoped admin key, a client token and the platform's admin,
// and the subscription keeps its client.
func TestPatchCannotMoveASubscriptionThroughACaseVariant(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withClientKeys(t))
	a := bearer(adminKey)
	resp, got := s.do(t, http.MethodPost, "/api/event-types", map[string]any{"code": "shop.order.created", "name": "Order created"}, a...)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", got)
	mustCreateClient(t, s, "acme")
	mustCreateClient(t, s, "globex")
	resp, tok := s.do(t, http.MethodPost, "/api/clients/globex/tokens", map[string]any{"role": "admin"}, a...)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", tok)
	globexSub := mustCreateSub(t, s, map[string]any{"code": "globex-sub", "clientId": "globex"})
	platformSub := mustCreateSub(t, s, map[string]any{"code": "platform-sub"})

	cases := []struct {
		name, key, sub, client string
	}{
		{"scoped admin key, own subscription", "k-globex-admin-0123", globexSub["id"].(string), "globex"},
		{"client token, own subscription", tok["token"].(string), globexSub["id"].(string), "globex"},
		{"platform admin, client's subscription", adminKey, globexSub["id"].(string), "globex"},
		{"platform admin, anchor subscription", adminKey, platformSub["id"].(string), ""},
	}
	for _, tc := range cases {
		for _, body := range caseVariants("acme") {
			resp, got := s.do(t, http.MethodPatch, "/api/subscriptions/"+tc.sub, body, bearer(tc.key)...)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%s: %v → %v", tc.name, body, got)
			var member string
			for k := range body {
				member = k
			}
			requirePointer(t, got, "/"+member)
		}
		resp, sub := s.do(t, http.MethodGet, "/api/subscriptions/"+tc.sub, nil, a...)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		if tc.client == "" {
			require.Nil(t, sub["clientId"], tc.name)
		} else {
			require.Equal(t, tc.client, sub["clientId"], tc.name)
		}
		require.Equal(t, tc.sub, sub["id"], tc.name)
	}

	// The exact names keep their meaning: the same client is accepted, a
	// change is the 422 of §11, and an unknown member is still ignored
	// (a GET answer sent back as a PATCH works).
	resp, got = s.do(t, http.MethodPatch, "/api/subscriptions/"+globexSub["id"].(string), map[string]any{"clientId": "globex", "name": "renamed"}, bearer("k-globex-admin-0123")...)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", got)
	resp, got = s.do(t, http.MethodPatch, "/api/subscriptions/"+globexSub["id"].(string), map[string]any{"clientId": nil}, a...)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v", got)
	requirePointer(t, got, "/clientId")
	resp, got = s.do(t, http.MethodPatch, "/api/subscriptions/"+globexSub["id"].(string), map[string]any{"circuit": map[string]any{"state": "OPEN"}, "name": "again"}, a...)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", got)
	require.Equal(t, "again", got["name"])

	// Creating with a case variant is refused too: globex cannot create a
	// subscription in acme's name, nor an anchor-level one.
	for _, body := range []map[string]any{{"ClientId": "acme"}, {"clientID": nil}} {
		body["code"] = "sneaky"
		body["target"] = "http://127.0.0.1:9/hook"
		body["eventTypes"] = []map[string]any{{"eventTypeCode": "shop.order.created"}}
		resp, got := s.do(t, http.MethodPost, "/api/subscriptions", body, bearer("k-globex-admin-0123")...)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v → %v", body, got)
	}
}

// TestCaseVariantMembersAreRefusedOnEveryRoute walks every route that takes
// a body with members named like real ones in another case, as the
// platform's admin: none answers 2xx or 5xx. A route added later is walked
// too.
func TestCaseVariantMembersAreRefusedOnEveryRoute(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withClientKeys(t))
	a := bearer(adminKey)
	mustCreateClient(t, s, "acme")
	resp, got := s.do(t, http.MethodPost, "/api/event-types", map[string]any{"code": "shop.order.created", "name": "Order created"}, a...)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", got)
	sub := mustCreateSub(t, s, map[string]any{"code": "walked", "clientId": "acme"})
	// Each body names members that the routes' bodies have, in another
	// case; a route whose body has none of them ignores the body or
	// refuses it for what is missing, never 2xx with a case variant taken.
	bodies := []map[string]any{
		{"ClientId": nil, "Code": "x", "Name": "x", "Role": "admin", "Concurrency": 3, "Since": "2020-01-01T00:00:00Z"},
		{"TARGET": "http://127.0.0.1:9/elsewhere", "Status": "PAUSED", "WorkerId": "w:1", "EventTypes": []any{}},
	}
	walked := 0
	for _, r := range api.New(s.Config).Routes() {
		if r.Method != http.MethodPost && r.Method != http.MethodPatch && r.Method != http.MethodPut {
			continue
		}
		if r.Path == "/api/events" || strings.HasPrefix(r.Path, "/api/events/") {
			continue // CloudEvents: attribute names are the spec's, parsed by ingest
		}
		u := strings.NewReplacer(":id", sub["id"].(string), ":tokenId", "none", ":code", "shop.order.created", ":version", "1.0", "*path", "").Replace(r.Path)
		for _, body := range bodies {
			resp, got := s.do(t, r.Method, u, body, a...)
			walked++
			require.Less(t, resp.StatusCode, 500, "%s %s: %v", r.Method, u, got)
			require.False(t, resp.StatusCode >= 200 && resp.StatusCode < 300 && bodyTakes(r.Path),
				"%s %s took a case-variant member: %d %v", r.Method, u, resp.StatusCode, got)
		}
	}
	require.Positive(t, walked)
	resp, after := s.do(t, http.MethodGet, "/api/subscriptions/"+sub["id"].(string), nil, a...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "acme", after["clientId"])
	require.Equal(t, "http://127.0.0.1:9/hook", after["target"])
}

// bodyTakes reports whether a route's body has one of the members the walk
// sends in another case (so a 2xx would mean the variant was taken).
func bodyTakes(path string) bool {
	for _, p := range []string{"/api/subscriptions", "/api/clients", "/api/dispatch-pools", "/api/event-types"} {
		if path == p || strings.HasPrefix(path, p+"/:id") && !strings.Contains(path, "/pause") && !strings.Contains(path, "/resume") && !strings.Contains(path, "/rotate-secret") {
			return true
		}
	}
	return false
}

func requirePointer(t *testing.T, problem map[string]any, pointer string) {
	t.Helper()
	errs, _ := problem["errors"].([]any)
	for _, e := range errs {
		if m, ok := e.(map[string]any); ok && m["pointer"] == pointer {
			return
		}
	}
	require.Failf(t, "no error at pointer", "want %s in %v", pointer, problem)
}

// TestReservedEventTypeCodes: the hooklane. prefix is the gateway's own
// (issue 28 item 7): no key may register an event type under it, in any
// case, while a code that merely starts with "hooklane" is a code like any.
func TestReservedEventTypeCodes(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withClientKeys(t))
	for _, code := range []string{"hooklane.circuit.forged", "HookLane.x", "HOOKLANE.subscription.disabled"} {
		resp, got := s.do(t, http.MethodPost, "/api/event-types", map[string]any{"code": code, "name": "forged"}, bearer(adminKey)...)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%s: %v", code, got)
		requirePointer(t, got, "/code")
	}
	resp, got := s.do(t, http.MethodPost, "/api/event-types", map[string]any{"code": "hooklanes.order.created", "name": "fine"}, bearer(adminKey)...)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", got)
}
