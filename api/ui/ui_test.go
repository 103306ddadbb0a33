package ui

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// assetBudget is the bound on the dashboard's total size.
const assetBudget = 300 << 10

func get(t *testing.T, h http.Handler, method, path string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), method, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestHandlerServesAssets(t *testing.T) {
	t.Parallel()
	h := Handler()
	tests := []struct {
		path        string
		contentType string
		contains    string
	}{
		{"/", "text/html; charset=utf-8", `<script type="module" src="js/app.js">`},
		{"/index.html", "text/html; charset=utf-8", "<title>Hooklane</title>"},
		{"/app.css", "text/css; charset=utf-8", ".lane.blocked"},
		{"/js/app.js", "text/javascript; charset=utf-8", "/api/auth/whoami"},
		{"/js/sse.js", "text/javascript; charset=utf-8", "Last-Event-ID"},
		{"/favicon.svg", "image/svg+xml", "<svg"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			rec := get(t, h, http.MethodGet, tt.path)
			require.Equal(t, http.StatusOK, rec.Code)
			require.Equal(t, tt.contentType, rec.Header().Get("Content-Type"))
			require.Equal(t, "no-cache", rec.Header().Get("Cache-Control"))
			require.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))
			require.Contains(t, rec.Header().Get("Content-Security-Policy"), "default-src 'none'")
			require.Contains(t, rec.Body.String(), tt.contains)

			etag := rec.Header().Get("ETag")
			require.Regexp(t, `^"[0-9a-f]{24}"$`, etag)
			again := get(t, h, http.MethodGet, tt.path, "If-None-Match", etag)
			require.Equal(t, http.StatusNotModified, again.Code)
			require.Empty(t, again.Body.String())
			head := get(t, h, http.MethodHead, tt.path)
			require.Equal(t, http.StatusOK, head.Code)
			require.Empty(t, head.Body.String())
			require.Equal(t, rec.Header().Get("Content-Length"), head.Header().Get("Content-Length"))
		})
	}
}

func TestHandlerRefuses(t *testing.T) {
	t.Parallel()
	h := Handler()
	require.Equal(t, http.StatusNotFound, get(t, h, http.MethodGet, "/no-such.js").Code)
	require.Equal(t, http.StatusNotFound, get(t, h, http.MethodGet, "/../ui.go").Code)
	rec := get(t, h, http.MethodPost, "/")
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	require.Equal(t, "GET, HEAD", rec.Header().Get("Allow"))
}

func TestMatchesETag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		header string
		want   bool
	}{
		{`"abc"`, true},
		{`W/"abc"`, true},
		{`"x", "abc"`, true},
		{`*`, true},
		{`"abcd"`, false},
		{``, false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, matchesETag(tt.header, `"abc"`), tt.header)
	}
}

// externalRef finds a reference the browser would fetch from another
// origin: a src/href/url()/import/fetch of an absolute URL.
var externalRef = regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//|url\(\s*["']?(https?:)?//|import\s[^;]*["'](https?:)?//|fetch\(\s*["'](https?:)?//|@import`)

// TestAssetsStayWithinBudgetAndOrigin checks the size budget and
// that nothing is loaded from a CDN or another origin at run time.
func TestAssetsStayWithinBudgetAndOrigin(t *testing.T) {
	t.Parallel()
	total := 0
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		if d.IsDir() {
			return nil
		}
		b, err := fs.ReadFile(assets, p)
		require.NoError(t, err)
		total += len(b)
		if m := externalRef.FindString(string(b)); m != "" {
			t.Errorf("%s refers to another origin: %q", p, m)
		}
		require.NotContains(t, string(b), "TODO", "%s has a TODO", p)
		return nil
	})
	require.NoError(t, err)
	require.Less(t, total, assetBudget, "assets are %d bytes", total)
	t.Logf("dashboard assets: %d bytes", total)
}
