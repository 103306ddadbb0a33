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

func TestTransformationTestEndpoint(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	created := mustCreateSub(t, s, map[string]any{
		"code": "tf-test", "headers": map[string]any{"X-Team": "orders"},
		"transformation": map[string]any{"code": renameHandler},
	})
	path := "/api/subscriptions/" + created["id"].(string) + "/transformation/test"
	event := map[string]any{
		"specversion": "1.0", "id": "e-1", "source": "/shop", "type": "shop.order.created",
		"data": map[string]any{"id": "o-42"},
	}

	resp, got := s.do(t, http.MethodPost, path, map[string]any{"event": event}, bearer(adminKey)...)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", got)
	require.Equal(t, map[string]any{"ok": true, "result": map[string]any{
		"method": "POST", "url": "http://127.0.0.1:9/hook", "headers": map[string]any{"x-team": "orders"},
		"payload": map[string]any{"orderId": "o-42"}, "cancel": false,
	}}, got, "the stored code runs on the structured event")

	put := "function handler(w) {\n  w.method = 'PUT';\n  w.url = w.url + '/' + w.payload.data.id;\n  w.cancel = w.eventType !== 'shop.order.created';\n  return w;\n}"
	resp, got = s.do(t, http.MethodPost, path, map[string]any{"event": event, "code": put}, bearer(adminKey)...)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", got)
	result := got["result"].(map[string]any)
	require.Equal(t, "PUT", result["method"])
	require.Equal(t, "http://127.0.0.1:9/hook/o-42", result["url"], "the code of the request runs instead of the stored one")

	resp, got = s.do(t, http.MethodPost, path, map[string]any{"event": event, "code": "function handler(w) {\n  throw new Error('nope');\n}"}, bearer(adminKey)...)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", got)
	require.Equal(t, false, got["ok"])
	require.Contains(t, got["error"], "nope")
	require.InDelta(t, 2, got["line"], 0)

	resp, got = s.do(t, http.MethodPost, path, map[string]any{"event": event, "code": "function handler(w) {\n  return w +;\n}"}, bearer(adminKey)...)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", got)
	require.Equal(t, false, got["ok"], "code that does not compile is an answer, not a problem")
	require.InDelta(t, 2, got["line"], 0)
	require.NotZero(t, got["column"])

	resp, got = s.do(t, http.MethodPost, path, map[string]any{"event": map[string]any{"id": "e-1"}}, bearer(adminKey)...)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v", got)
	resp, got = s.do(t, http.MethodPost, path, map[string]any{"event": "not an event"}, bearer(adminKey)...)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v", got)

	resp, _ = s.do(t, http.MethodPost, "/api/subscriptions/missing/transformation/test", map[string]any{"event": event}, bearer(adminKey)...)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	_, got = s.do(t, http.MethodGet, "/api/subscriptions/"+created["id"].(string), nil, bearer(adminKey)...)
	require.Equal(t, renameHandler, got["transformation"].(map[string]any)["code"], "testing stores nothing")
}

// The test endpoint applies the checks a delivery makes of the result: for
// a subscription with a destination, a method other than POST (or a url)
// fails the test with the delivery's invalid_result error instead of testing
// "ok"; for a target with auth, another host fails as at delivery.
func TestTransformationTestEndpointChecksLikeDelivery(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	event := map[string]any{
		"specversion": "1.0", "id": "e-1", "source": "/shop", "type": "shop.order.created",
		"data": map[string]any{"id": "o-42"},
	}
	test := func(t *testing.T, id, code string) map[string]any {
		t.Helper()
		resp, got := s.do(t, http.MethodPost, "/api/subscriptions/"+id+"/transformation/test",
			map[string]any{"event": event, "code": code}, bearer(adminKey)...)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%v", got)
		return got
	}

	// A destination subscription, made in the store: the test server has no
	// broker types enabled, and the endpoint reads only that it has one.
	created := mustCreateSub(t, s, map[string]any{"code": "tf-dest", "transformation": map[string]any{"code": renameHandler}})
	id := created["id"].(string)
	stored, err := s.Store.SubscriptionGetByID(t.Context(), id)
	require.NoError(t, err)
	stored.Destination = []byte(`{"type":"kafka","brokers":["127.0.0.1:9092"],"topic":"orders"}`)
	stored.Target, stored.TargetURL = "", "kafka://127.0.0.1:9092/orders"
	require.NoError(t, s.Store.SubscriptionUpdate(t.Context(), stored))

	got := test(t, id, "function handler(w) {\n  w.method = 'PUT';\n  return w;\n}")
	require.Equal(t, false, got["ok"], "%v", got)
	require.Contains(t, got["error"], "invalid_result")
	require.Contains(t, got["error"], `method "PUT" cannot be set: the subscription delivers to a destination`)

	got = test(t, id, "function handler(w) {\n  w.url = 'http://127.0.0.1:9/x';\n  return w;\n}")
	require.Equal(t, false, got["ok"], "%v", got)
	require.Contains(t, got["error"], "url cannot be set")

	got = test(t, id, "function handler(w) {\n  w.headers['x-order'] = w.payload.data.id;\n  return w;\n}")
	require.Equal(t, true, got["ok"], "%v", got)
	result := got["result"].(map[string]any)
	require.Equal(t, "POST", result["method"])
	require.Empty(t, result["url"], "a destination's handler gets no url")

	got = test(t, id, "function handler(w) {\n  w.method = 'PATCH';\n  w.cancel = true;\n  return w;\n}")
	require.Equal(t, true, got["ok"], "a cancelled delivery is not checked, as at delivery: %v", got)

	// A target with auth: only the path and query may change.
	authed := mustCreateSub(t, s, map[string]any{
		"code": "tf-auth", "target": "http://127.0.0.1:9/hook",
		"auth": map[string]any{"type": "bearer", "token": "platform-token"},
	})
	got = test(t, authed["id"].(string), "function handler(w) {\n  w.url = 'http://127.0.0.2:9/hook';\n  return w;\n}")
	require.Equal(t, false, got["ok"], "%v", got)
	require.Contains(t, got["error"], "with auth or tls only the path and query may change")
	got = test(t, authed["id"].(string), "function handler(w) {\n  w.url = 'http://127.0.0.1:9/hook/o-42?x=1';\n  w.method = 'PUT';\n  return w;\n}")
	require.Equal(t, true, got["ok"], "%v", got)
}
