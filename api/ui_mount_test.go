package api_test

import (
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUIMountedAtSlashUI(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	ui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		_, _ = io.WriteString(w, "dashboard")
	})
	ts := newTestServer(t, func(c *serverConfig) { c.UI = ui })
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+"/ui", nil)
	require.NoError(t, err)
	resp, err := client.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusMovedPermanently, resp.StatusCode)
	require.Equal(t, "/ui/", resp.Header.Get("Location"))

	for _, p := range []string{"/ui/", "/ui/js/app.js"} {
		resp, body := ts.do(t, http.MethodGet, p, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, p)
		require.Nil(t, body)
	}
	mu.Lock()
	require.Equal(t, []string{"GET /", "GET /js/app.js"}, seen)
	mu.Unlock()

	// Without a UI the path is an ordinary unknown route.
	bare := newTestServer(t, nil)
	resp, _ = bare.do(t, http.MethodGet, "/ui/", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}
