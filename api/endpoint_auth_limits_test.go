package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/subscription"
)

// TestEndpointValuesThatCouldNeverBeDeliveredAreRefused is issue 28's
// item 9 through the API: a 100 KB bearer token, a 100 KB header and
// 100,000 OAuth scopes were accepted and failed every delivery with 431.
// Subscriptions and TASK jobs share the one validator: each is refused
// with 422 at its pointer, and the same values at their bounds are
// accepted.
func TestEndpointValuesThatCouldNeverBeDeliveredAreRefused(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	createType(t, s, "shop.order.created")
	r := strings.Repeat
	manyScopes := make([]string, 100_000)
	for i := range manyScopes {
		manyScopes[i] = "s"
	}
	oauth2 := func(scopes []string) map[string]any {
		return map[string]any{"type": "oauth2", "tokenUrl": "http://127.0.0.1:9/token", "clientId": "gw", "clientSecret": "cs", "scopes": scopes}
	}
	tests := []struct {
		name    string
		fields  []any
		pointer string
	}{
		{"100 KB bearer token", []any{"auth", map[string]any{"type": "bearer", "token": r("t", 100_000)}}, "/auth/token"},
		{"100 KB header", []any{"headers", map[string]any{"X-Big": r("v", 100_000)}}, "/headers/X-Big"},
		{"100,000 scopes", []any{"auth", oauth2(manyScopes)}, "/auth/scopes"},
		{"bearer token just past its bound", []any{"auth", map[string]any{"type": "bearer", "token": r("t", subscription.AuthTokenMaxBytes+1)}}, "/auth/token"},
		{"one header too many", []any{"headers", manyHeaders(subscription.HeadersMax + 1)}, "/headers"},
		{"bearer token at its bound", []any{"auth", map[string]any{"type": "bearer", "token": r("t", subscription.AuthTokenMaxBytes)}}, ""},
		{"headers at the count bound", []any{"headers", manyHeaders(subscription.HeadersMax)}, ""},
		{"scopes at the count bound", []any{"auth", oauth2(manyScopes[:subscription.AuthScopesMax])}, ""},
	}
	for i, tt := range tests {
		sub := map[string]any{"code": "s" + string(rune('a'+i)), "eventTypes": []any{map[string]any{"eventTypeCode": "shop.order.created"}}, "target": "http://127.0.0.1:9/hook"}
		for j := 0; j+1 < len(tt.fields); j += 2 {
			sub[tt.fields[j].(string)] = tt.fields[j+1]
		}
		for _, req := range []struct {
			path string
			body map[string]any
		}{{"/api/subscriptions", sub}, {"/api/dispatch-jobs", taskBody(tt.fields...)}} {
			resp, got := s.do(t, http.MethodPost, req.path, req.body)
			if tt.pointer == "" {
				require.Equal(t, http.StatusCreated, resp.StatusCode, "%s %s: %v", tt.name, req.path, got)
				continue
			}
			requireRefusedAt(t, resp, got, tt.pointer)
			require.Len(t, got["errors"], 1, "%s %s: one problem, not one per value", tt.name, req.path)
		}
	}
}

func manyHeaders(n int) map[string]any {
	h := make(map[string]any, n)
	for i := range n {
		h["X-H"+string(rune('A'+i/26))+string(rune('A'+i%26))] = "v"
	}
	return h
}
