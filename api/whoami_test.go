package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWhoamiAuthOff(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	resp, body := ts.do(t, http.MethodGet, "/api/auth/whoami", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, map[string]any{"name": "anonymous", "role": "admin", "authEnabled": false}, body)
}

func TestWhoamiNamesTheKeyAndItsRole(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withKeys(t))
	names := map[string]string{"admin": "ops", "producer": "shop", "worker": "pull", "viewer": "dash"}
	for role, key := range roleKeys {
		resp, body := ts.do(t, http.MethodGet, "/api/auth/whoami", nil, "Authorization", "Bearer "+key)
		require.Equal(t, http.StatusOK, resp.StatusCode, role)
		require.Equal(t, map[string]any{"name": names[role], "role": role, "authEnabled": true}, body)
	}
	resp, _ := ts.do(t, http.MethodGet, "/api/auth/whoami", nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}
