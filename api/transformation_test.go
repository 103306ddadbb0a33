package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// renameHandler is a transformation that renames a field of the data.
const renameHandler = `function handler(webhook) {
  webhook.payload = {orderId: webhook.payload.data.id};
  return webhook;
}`

// problemAt returns the message of the problem's error at pointer, failing
// when there is none.
func problemAt(t *testing.T, body map[string]any, pointer string) string {
	t.Helper()
	errs, _ := body["errors"].([]any)
	for _, e := range errs {
		fe, _ := e.(map[string]any)
		if fe["pointer"] == pointer {
			msg, _ := fe["message"].(string)
			return msg
		}
	}
	require.Failf(t, "no error at pointer", "%s in %v", pointer, body)
	return ""
}

func TestSubscriptionTransformationField(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)

	t.Run("CreateDefaultsEnabledAndReadsBack", func(t *testing.T) {
		t.Parallel()
		created := mustCreateSub(t, s, map[string]any{"code": "tf-create", "transformation": map[string]any{"code": renameHandler}})
		want := map[string]any{"code": renameHandler, "enabled": true}
		require.Equal(t, want, created["transformation"])
		resp, got := s.do(t, http.MethodGet, "/api/subscriptions/"+created["id"].(string), nil, bearer(adminKey)...)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, want, got["transformation"])
	})

	t.Run("NoneIsNull", func(t *testing.T) {
		t.Parallel()
		created := mustCreateSub(t, s, map[string]any{"code": "tf-none"})
		v, ok := created["transformation"]
		require.True(t, ok, "the member is always present")
		require.Nil(t, v)
	})

	t.Run("CreateRefusesBadCode", func(t *testing.T) {
		t.Parallel()
		cases := map[string]struct {
			code string
			want []string
		}{
			"syntax":    {code: "function handler(w) {\n  return w +;\n}", want: []string{"line 2, column"}},
			"noHandler": {code: "function other(w) { return w }", want: []string{"handler"}},
			"tooLarge":  {code: "function handler(w) { return w }\n//" + strings.Repeat("x", 64<<10), want: []string{"65536"}},
			"empty":     {code: "", want: []string{"is required"}},
		}
		for name, tc := range cases {
			resp, got := s.do(t, http.MethodPost, "/api/subscriptions", map[string]any{
				"code": "tf-bad-" + name, "target": "http://127.0.0.1:9/hook",
				"eventTypes":     []map[string]any{{"eventTypeCode": "shop.order.created"}},
				"transformation": map[string]any{"code": tc.code},
			}, bearer(adminKey)...)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%s: %v", name, got)
			msg := problemAt(t, got, "/transformation/code")
			for _, w := range tc.want {
				require.Contains(t, msg, w, name)
			}
			if name == "syntax" {
				require.Contains(t, got["detail"], "line 2, column", "the detail names the position")
			}
		}
	})

	t.Run("PullRefused", func(t *testing.T) {
		t.Parallel()
		resp, got := s.do(t, http.MethodPost, "/api/subscriptions", map[string]any{
			"code": "tf-pull", "delivery": "pull",
			"eventTypes":     []map[string]any{{"eventTypeCode": "shop.order.created"}},
			"transformation": map[string]any{"code": renameHandler},
		}, bearer(adminKey)...)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v", got)
		require.Contains(t, problemAt(t, got, "/transformation"), "push")
	})

	t.Run("PatchMergesValidatesAndRemoves", func(t *testing.T) {
		t.Parallel()
		created := mustCreateSub(t, s, map[string]any{
			"code": "tf-patch", "transformation": map[string]any{"code": renameHandler, "enabled": false},
		})
		path := "/api/subscriptions/" + created["id"].(string)
		require.Equal(t, false, created["transformation"].(map[string]any)["enabled"])

		next := "function handler(w) { w.method = 'PUT'; return w }"
		resp, got := s.do(t, http.MethodPatch, path, map[string]any{"transformation": map[string]any{"code": next}}, bearer(adminKey)...)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%v", got)
		require.Equal(t, map[string]any{"code": next, "enabled": false}, got["transformation"], "a member left out keeps its value")

		resp, got = s.do(t, http.MethodPatch, path, map[string]any{"transformation": map[string]any{"code": "function handler(w) { return w"}}, bearer(adminKey)...)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v", got)
		require.Contains(t, problemAt(t, got, "/transformation/code"), "line 1, column")
		_, got = s.do(t, http.MethodGet, path, nil, bearer(adminKey)...)
		require.Equal(t, map[string]any{"code": next, "enabled": false}, got["transformation"], "a refused PATCH changes nothing")

		resp, got = s.do(t, http.MethodPatch, path, map[string]any{"transformation": map[string]any{"enabled": true}}, bearer(adminKey)...)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%v", got)
		require.Equal(t, map[string]any{"code": next, "enabled": true}, got["transformation"])

		resp, got = s.do(t, http.MethodPatch, path, `{"transformation": null}`, bearer(adminKey)...)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%v", got)
		require.Nil(t, got["transformation"])
		_, got = s.do(t, http.MethodGet, path, nil, bearer(adminKey)...)
		require.Nil(t, got["transformation"], "null removes it")
	})
}
