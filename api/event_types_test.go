package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEventTypeCreateAndGet(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	resp, body := s.do(t, http.MethodPost, "/api/event-types", map[string]any{"code": "shop.order.created", "name": "Order created"})
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", body)
	require.Equal(t, "/api/event-types/shop.order.created", resp.Header.Get("Location"))
	require.Equal(t, "CURRENT", body["status"])
	require.Equal(t, []any{}, body["versions"])

	resp, body = s.do(t, http.MethodGet, "/api/event-types/shop.order.created", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "Order created", body["name"])

	resp, body = s.do(t, http.MethodPost, "/api/event-types", `{"code":"shop.order.created","name":"again"}`)
	require.Equal(t, http.StatusConflict, resp.StatusCode, "%v", body)
	require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
}
