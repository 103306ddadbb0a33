package api_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/api"
)

const testKeys = "ops:admin:k-admin-0123456789,shop:producer:k-producer-0123456789," +
	"pull:worker:k-worker-0123456789,dash:viewer:k-viewer-0123456789"

var roleKeys = map[string]string{ //nolint:gochecknoglobals // test fixture
	"admin": "k-admin-0123456789", "producer": "k-producer-0123456789",
	"worker": "k-worker-0123456789", "viewer": "k-viewer-0123456789",
}

func withKeys(t *testing.T) func(*serverConfig) {
	t.Helper()
	ks, err := api.ParseKeys(testKeys)
	require.NoError(t, err)
	return func(c *serverConfig) { c.Keys = ks }
}

// TestAuthRolesPerRoute runs every role, no key and an unknown key against
// every registered /api route. The allowed roles come from openapi.json's
// x-hooklane-roles, which states API.md's role conventions per operation.
func TestAuthRolesPerRoute(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withKeys(t))
	roles := rolesOf(t)
	for _, r := range routesOf(t) {
		method, path, _ := strings.Cut(r, " ")
		if !strings.HasPrefix(path, "/api/") {
			continue
		}
		allowed, ok := roles[r]
		require.True(t, ok, "route %s has no documented roles", r)
		url := strings.NewReplacer("{id}", "01JD0000000000000000000000", "{code}", "no.such.type", "{version}", "1.0").Replace(path)
		// Every request has a body that cannot do harm: the handler may
		// answer 400/404/409/422, but never 401/403 to an allowed key.
		body := "{}"
		t.Run(r, func(t *testing.T) {
			t.Parallel()
			resp, _ := ts.do(t, method, url, body)
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no key")
			require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
			require.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
			resp, _ = ts.do(t, method, url, body, "Authorization", "Bearer not-a-key")
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "unknown key")
			resp, _ = ts.do(t, method, url, body, "Authorization", "k-admin-0123456789")
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "key without the Bearer scheme")
			for role, key := range roleKeys {
				resp, _ := ts.do(t, method, url, body, "Authorization", "Bearer "+key)
				if role == "admin" || slices.Contains(allowed, role) {
					require.NotContains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, resp.StatusCode, "role %s must be allowed", role)
				} else {
					require.Equal(t, http.StatusForbidden, resp.StatusCode, "role %s must be refused", role)
				}
			}
		})
	}
}

func TestAuthOffWithoutKeys(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	resp, _ := ts.do(t, http.MethodGet, "/api/event-types", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestAuthProbesNeedNoKey(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withKeys(t))
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, _ := ts.do(t, http.MethodGet, p, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, p)
	}
}

func TestParseKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, spec string
		wantLen    int
		wantErr    string
	}{
		{name: "empty", spec: "", wantLen: 0},
		{name: "two", spec: "a:admin:x1, b:viewer:x2", wantLen: 2},
		{name: "key with colons", spec: "a:admin:x:y:z", wantLen: 1},
		{name: "missing key", spec: "a:admin:", wantErr: "want name:role:key"},
		{name: "bad role", spec: "a:root:x", wantErr: `unknown role "root"`},
		{name: "duplicate name", spec: "a:admin:x1,a:viewer:x2", wantErr: "used twice"},
		{name: "duplicate key", spec: "a:admin:x1,b:viewer:x1", wantErr: `the same key as "a"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ks, err := api.ParseKeys(tt.spec)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.NotContains(t, err.Error(), "x1", "an error must not show a key")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantLen, ks.Len())
		})
	}
}

func TestParseKeyFile(t *testing.T) {
	t.Parallel()
	ks, err := api.ParseKeyFile("# production keys\n\nops:admin:abc,def\n  # indented comment\nshop:producer:xyz\n")
	require.NoError(t, err)
	require.Equal(t, []string{"ops (admin)", "shop (producer)"}, ks.Names())

	_, err = api.ParseKeyFile("ops:admin:abc\nbroken line\n")
	require.ErrorContains(t, err, "line 2")

	joined, err := api.JoinKeys(ks, mustKeys(t, "dash:viewer:v"))
	require.NoError(t, err)
	require.Equal(t, 3, joined.Len())
	_, err = api.JoinKeys(ks, mustKeys(t, "ops:viewer:other"))
	require.ErrorContains(t, err, "used twice")
}

func mustKeys(t *testing.T, spec string) *api.KeySet {
	t.Helper()
	ks, err := api.ParseKeys(spec)
	require.NoError(t, err)
	return ks
}

// TestAuthLogsKeyNameNotKey checks the access log line: the key's name is
// there, the key is not, and the request id is.
func TestAuthLogsKeyNameNotKey(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	ts := newTestServer(t, func(c *serverConfig) {
		withKeys(t)(c)
		c.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	resp, _ := ts.do(t, http.MethodGet, "/api/event-types", nil, "Authorization", "Bearer k-viewer-0123456789", "X-Request-Id", "req-abc.123")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "req-abc.123", resp.Header.Get("X-Request-Id"))
	out := logs.String()
	require.Contains(t, out, `"api_key":"dash"`)
	require.Contains(t, out, `"request_id":"req-abc.123"`)
	require.NotContains(t, out, "k-viewer-0123456789")
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p) //nolint:wrapcheck // in-memory
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newJSONLogger(w *syncBuffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// TestBearerSchemeIsCaseInsensitive: RFC 9110 §11.1 makes the scheme name
// case-insensitive; any spelling of Bearer works, another scheme does not.
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withKeys(t))
	for _, scheme := range []string{"Bearer ", "bearer ", "BEARER ", "bEaReR ", "Bearer   "} {
		resp, _ := ts.do(t, http.MethodGet, "/api/event-types", nil, "Authorization", scheme+roleKeys["viewer"])
		require.Equal(t, http.StatusOK, resp.StatusCode, "scheme %q", scheme)
	}
	for _, value := range []string{"Basic " + roleKeys["viewer"], "Bearer", "Bearer ", "Bearerx " + roleKeys["viewer"], roleKeys["viewer"]} {
		resp, _ := ts.do(t, http.MethodGet, "/api/event-types", nil, "Authorization", value)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "value %q", value)
	}
}
