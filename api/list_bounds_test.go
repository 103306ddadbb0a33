package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/api"
)

// A list's query filters are bounded before they reach the store: a
// thousand ext.* filters once answered 500 (SQLite's expression depth);
// past ExtFiltersMax they are a 422 naming the query parameter, at the
// bound a 200. A filter value (or name) longer than QueryValueMaxBytes is
// a 422 on every list route with query filters.
func TestListQueryFiltersAreBounded(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	extQuery := func(n int) string {
		var b strings.Builder
		b.WriteString("/api/events?limit=10")
		for i := range n {
			fmt.Fprintf(&b, "&ext.x%d=v%d", i, i)
		}
		return b.String()
	}
	problemOf := func(t *testing.T, resp *http.Response, body map[string]any, param string) {
		t.Helper()
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v", body)
		errs, ok := body["errors"].([]any)
		require.True(t, ok, "%v", body)
		require.Len(t, errs, 1)
		e, ok := errs[0].(map[string]any)
		require.True(t, ok)
		require.Empty(t, e["pointer"], "a query parameter has no pointer into the body")
		msg, ok := e["message"].(string)
		require.True(t, ok)
		require.Contains(t, msg, param)
	}

	resp, body := s.do(t, http.MethodGet, extQuery(1000), nil)
	problemOf(t, resp, body, "ext.*")
	resp, body = s.do(t, http.MethodGet, extQuery(api.ExtFiltersMax+1), nil)
	problemOf(t, resp, body, "ext.*")
	resp, body = s.do(t, http.MethodGet, extQuery(api.ExtFiltersMax), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", body)

	long := strings.Repeat("a", api.QueryValueMaxBytes+1)
	atBound := strings.Repeat("a", api.QueryValueMaxBytes)
	for _, route := range []string{
		"/api/events?ext.x=%s", "/api/events?type=%s", "/api/dispatch-jobs?eventType=%s", "/api/dispatch-jobs?subscription=%s",
		"/api/subscriptions?eventType=%s",
	} {
		param := route[strings.Index(route, "?")+1 : strings.Index(route, "=")]
		resp, body = s.do(t, http.MethodGet, fmt.Sprintf(route, long), nil)
		problemOf(t, resp, body, param)
		resp, body = s.do(t, http.MethodGet, fmt.Sprintf(route, atBound), nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %v", route, body)
	}
}
