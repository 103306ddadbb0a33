package api_test

import (
	"maps"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEveryListRefusesCursorsItDidNotGive: API.md conventions — every list
// pages with the opaque nextCursor it gave, and answers 422 problem+json,
// naming the cursor parameter, to a cursor it did not give: garbage, a raw
// store id (what the store-paged lists took silently), or the cursor of
// another list.
func TestEveryListRefusesCursorsItDidNotGive(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	createType(t, ts, "cur.a")
	createType(t, ts, "cur.b")
	createType(t, ts, "cur.c")
	for _, code := range []string{"s1", "s2", "s3"} {
		resp, got := ts.do(t, http.MethodPost, "/api/subscriptions",
			`{"code":"`+code+`","eventTypes":[{"eventTypeCode":"cur.a"}],"target":"http://127.0.0.1:9/h"}`)
		require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", got)
	}
	resp, pull := ts.do(t, http.MethodPost, "/api/subscriptions",
		`{"code":"puller","eventTypes":[{"eventTypeCode":"cur.b"}],"delivery":"pull"}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", pull)
	for _, code := range []string{"p1", "p2"} {
		resp, got := ts.do(t, http.MethodPost, "/api/dispatch-pools", `{"code":"`+code+`","concurrency":1}`)
		require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", got)
	}
	for _, id := range []string{"e1", "e2", "e3"} {
		resp, got := ts.do(t, http.MethodPost, "/api/events", `{"specversion":"1.0","id":"`+id+`","source":"/t","type":"cur.a"}`,
			"Content-Type", "application/cloudevents+json")
		require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", got)
	}
	for _, w := range []string{"w1", "w2", "w3"} {
		resp, _ := ts.do(t, http.MethodGet, "/api/subscriptions/"+pull["id"].(string)+"/jobs/next?worker_id="+w, nil)
		require.Equal(t, http.StatusNoContent, resp.StatusCode)
	}

	lists := []struct{ path, key string }{
		{"/api/events", "id"},
		{"/api/dispatch-jobs", "id"},
		{"/api/dispatch-jobs?subscription=s1", "id"},
		{"/api/subscriptions", "id"},
		{"/api/subscriptions?eventType=cur.a", "id"},
		{"/api/event-types", "code"},
		{"/api/dispatch-pools", "id"},
		{"/api/workers", "workerId"},
	}
	withQuery := func(path, q string) string {
		u, err := url.Parse(path)
		require.NoError(t, err)
		v := u.Query()
		maps.Copy(v, mustQuery(t, q))
		u.RawQuery = v.Encode()
		return u.String()
	}
	firstCursor := map[string]string{}
	for _, l := range lists {
		// The whole list in one page, then walked two at a time.
		resp, all := ts.do(t, http.MethodGet, withQuery(l.path, "limit=500"), nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %v", l.path, all)
		var want []any
		for _, it := range all["items"].([]any) {
			want = append(want, it.(map[string]any)[l.key])
		}
		require.GreaterOrEqual(t, len(want), 3, l.path)
		var walked []any
		cursor := ""
		for range 10 {
			q := "limit=2"
			if cursor != "" {
				q += "&cursor=" + url.QueryEscape(cursor)
			}
			resp, pg := ts.do(t, http.MethodGet, withQuery(l.path, q), nil)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %v", l.path, pg)
			for _, it := range pg["items"].([]any) {
				walked = append(walked, it.(map[string]any)[l.key])
			}
			next, _ := pg["nextCursor"].(string)
			if next == "" {
				break
			}
			if cursor == "" {
				firstCursor[l.path] = next
			}
			cursor = next
		}
		require.Equal(t, want, walked, "%s: every item once, in order, across pages", l.path)
	}

	for _, l := range lists {
		bad := []string{"@@not-a-cursor", "01JD0000000000000000000000", "zzzzzzzzzzzzzzzzzzzzzzzzzz", "AAAAAAAA"}
		for other, c := range firstCursor {
			if u, _ := url.Parse(other); u.Path != mustPath(t, l.path) {
				bad = append(bad, c)
			}
		}
		t.Run(l.path, func(t *testing.T) {
			t.Parallel()
			for _, c := range bad {
				resp, got := ts.do(t, http.MethodGet, withQuery(l.path, "cursor="+url.QueryEscape(c)), nil)
				require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%s with cursor %q: %v", l.path, c, got)
				require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
				errs := got["errors"].([]any)
				require.Len(t, errs, 1)
				require.Contains(t, errs[0].(map[string]any)["message"], "query parameter cursor")
			}
		})
	}
}

func mustQuery(t *testing.T, q string) url.Values {
	t.Helper()
	v, err := url.ParseQuery(q)
	require.NoError(t, err)
	return v
}

func mustPath(t *testing.T, p string) string {
	t.Helper()
	u, err := url.Parse(p)
	require.NoError(t, err)
	return u.Path
}
