package main

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOpsEndpointsWithoutAPIRole checks that a process running only the
// router or only the pollers still answers the probes and the metrics
// scrape (a Kubernetes Deployment per role depends on them), and serves
// no API.
func TestOpsEndpointsWithoutAPIRole(t *testing.T) {
	t.Parallel()
	for _, role := range []string{"router", "pollers", "router,pollers"} {
		t.Run(role, func(t *testing.T) {
			t.Parallel()
			gw := startGateway(t, map[string]string{"HOOKLANE_ROLES": role})

			status, _, body := gw.do(t, "GET", "/healthz", "", "", nil)
			require.Equal(t, http.StatusOK, status)
			require.Equal(t, "ok", body["status"])
			require.Equal(t, version, body["version"])

			status, _, body = gw.do(t, "GET", "/readyz", "", "", nil)
			require.Equal(t, http.StatusOK, status)
			require.Equal(t, "ready", body["status"])
			require.Equal(t, map[string]any{"store": "ok", "queue": "ok"}, body["checks"])

			resp, err := http.Get(gw.base + "/metrics") //nolint:noctx // test
			require.NoError(t, err)
			raw, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Contains(t, string(raw), "# TYPE hooklane_stream_clients gauge")
			require.Contains(t, string(raw), "# TYPE go_goroutines gauge")

			for _, path := range []string{"/api/events", "/api/subscriptions", "/ui/"} {
				resp, err := http.Get(gw.base + path) //nolint:noctx // test
				require.NoError(t, err)
				require.NoError(t, resp.Body.Close())
				require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
			}
		})
	}
}
