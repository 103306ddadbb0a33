package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination/endpoint/endpointtest"
)

// requireNoSecret fails when any answer body holds one of the secrets.
func requireNoSecretIn(t *testing.T, resp *http.Response, secrets ...string) {
	t.Helper()
	var body json.RawMessage
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	for _, s := range secrets {
		require.NotContains(t, string(body), s)
	}
}

func TestTaskJobAuthAndTLS(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	pki := endpointtest.NewPKI(t)
	body := taskBody("targetUrl", "https://127.0.0.1:9/hook",
		"auth", map[string]any{"type": "oauth2", "tokenUrl": "https://127.0.0.1:9/token", "clientId": "gw", "clientSecret": "task-client-secret"},
		"tls", map[string]any{"clientCertificate": pki.ClientCertificate, "clientKey": pki.ClientKey})
	resp, got := s.do(t, http.MethodPost, "/api/dispatch-jobs", body)
	require.Equal(t, http.StatusCreated, resp.StatusCode, got)
	requireNoSecretIn(t, resp, "task-client-secret", pki.ClientKey)
	require.Equal(t, "***", got["auth"].(map[string]any)["clientSecret"])
	require.Equal(t, "***", got["tls"].(map[string]any)["clientKey"])
	id := got["id"].(string)

	stored, err := s.Store.JobGetByID(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, "task-client-secret", stored.Auth.ClientSecret, "stored for delivery")
	require.Equal(t, pki.ClientKey, stored.TLS.ClientKey)

	resp, _ = s.do(t, http.MethodGet, "/api/dispatch-jobs/"+id, nil)
	requireNoSecretIn(t, resp, "task-client-secret", pki.ClientKey)
	resp, _ = s.do(t, http.MethodGet, "/api/dispatch-jobs", nil)
	requireNoSecretIn(t, resp, "task-client-secret", pki.ClientKey)

	// Bad input: the pointers of the request body, nothing stored.
	other := endpointtest.NewPKI(t)
	for _, tt := range []struct {
		body    map[string]any
		pointer string
	}{
		{taskBody("auth", map[string]any{"type": "oauth2", "tokenUrl": "file:///etc/passwd", "clientId": "gw", "clientSecret": "x"}), "/auth/tokenUrl"},
		{taskBody("auth", map[string]any{"type": "bearer"}), "/auth/token"},
		{taskBody("tls", map[string]any{"caCertificate": pki.CACertificate}), "/tls"},
		{taskBody("targetUrl", "https://127.0.0.1:9/", "tls", map[string]any{"clientCertificate": pki.ClientCertificate, "clientKey": other.ClientKey}), "/tls/clientKey"},
	} {
		resp, got := s.do(t, http.MethodPost, "/api/dispatch-jobs", tt.body)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, got)
		errs := got["errors"].([]any)
		require.Equal(t, tt.pointer, errs[0].(map[string]any)["pointer"], got)
	}
	_, list := s.do(t, http.MethodGet, "/api/dispatch-jobs", nil)
	require.Len(t, list["items"], 1, "nothing stored for bad input")
}

func TestSubscriptionSecretsMaskedInEveryAnswer(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	pki := endpointtest.NewPKI(t)
	resp, got := s.do(t, http.MethodPost, "/api/subscriptions", map[string]any{
		"code": "orders", "eventTypes": []any{map[string]any{"eventTypeCode": "shop.order.created"}},
		"target": "https://127.0.0.1:9/hook",
		"auth":   map[string]any{"type": "bearer", "token": "sub-bearer-token"},
		"tls":    map[string]any{"clientCertificate": pki.ClientCertificate, "clientKey": pki.ClientKey, "caCertificate": pki.CACertificate},
	})
	require.Equal(t, http.StatusCreated, resp.StatusCode, got)
	requireNoSecretIn(t, resp, "sub-bearer-token", pki.ClientKey)
	require.Equal(t, map[string]any{"type": "bearer", "token": "***"}, got["auth"])
	id := got["id"].(string)

	for _, path := range []string{"/api/subscriptions/" + id, "/api/subscriptions", "/api/subscriptions?eventType=shop.order.created"} {
		resp, _ := s.do(t, http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		requireNoSecretIn(t, resp, "sub-bearer-token", pki.ClientKey)
	}
	for _, path := range []string{"/pause", "/resume"} {
		resp, _ := s.do(t, http.MethodPost, "/api/subscriptions/"+id+path, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		requireNoSecretIn(t, resp, "sub-bearer-token", pki.ClientKey)
	}

	// The answer sent back as a PATCH keeps the secrets.
	_, shown := s.do(t, http.MethodGet, "/api/subscriptions/"+id, nil)
	resp, got = s.do(t, http.MethodPatch, "/api/subscriptions/"+id, map[string]any{"name": "renamed", "auth": shown["auth"], "tls": shown["tls"]})
	require.Equal(t, http.StatusOK, resp.StatusCode, got)
	requireNoSecretIn(t, resp, "sub-bearer-token", pki.ClientKey)
	stored, err := s.Store.SubscriptionGetByID(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, "sub-bearer-token", stored.Auth.Token)
	require.Equal(t, pki.ClientKey, stored.TLS.ClientKey)

	// A bad key is refused at its pointer.
	resp, got = s.do(t, http.MethodPatch, "/api/subscriptions/"+id, map[string]any{"tls": map[string]any{"clientCertificate": pki.ClientCertificate}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, got)
	require.Equal(t, "/tls/clientKey", got["errors"].([]any)[0].(map[string]any)["pointer"])
}
