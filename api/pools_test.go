package api_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPoolCRUD(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var changed []string
	s := newTestServer(t, func(c *serverConfig) {
		c.PoolChangedFunc = func(id string) {
			mu.Lock()
			defer mu.Unlock()
			changed = append(changed, id)
		}
	})
	resp, got := s.do(t, http.MethodPost, "/api/dispatch-pools", map[string]any{"code": "partners", "ratePerSecond": 50.0, "burst": 10, "concurrency": 16})
	require.Equal(t, http.StatusCreated, resp.StatusCode, got)
	id := got["id"].(string)
	require.Equal(t, "/api/dispatch-pools/"+id, resp.Header.Get("Location"))
	require.InDelta(t, 50.0, got["ratePerSecond"], 0)

	resp, got = s.do(t, http.MethodPost, "/api/dispatch-pools", map[string]any{"code": "partners"})
	require.Equal(t, http.StatusConflict, resp.StatusCode, "duplicate code: %v", got)

	resp, got = s.do(t, http.MethodPatch, "/api/dispatch-pools/"+id, map[string]any{"ratePerSecond": nil, "concurrency": 4})
	require.Equal(t, http.StatusOK, resp.StatusCode, got)
	require.Nil(t, got["ratePerSecond"])
	require.InDelta(t, 4, got["concurrency"], 0)
	mu.Lock()
	require.Equal(t, []string{id}, changed, "the runtime pool is told to reload")
	mu.Unlock()

	resp, got = s.do(t, http.MethodGet, "/api/dispatch-pools", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, got)

	resp, _ = s.do(t, http.MethodDelete, "/api/dispatch-pools/"+id, nil)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	resp, _ = s.do(t, http.MethodGet, "/api/dispatch-pools/"+id, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestPoolValidation(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	for _, body := range []map[string]any{
		{},
		{"code": "has space"},
		{"code": "a", "ratePerSecond": 0},
		{"code": "a", "ratePerSecond": -1},
		{"code": "a", "burst": 0},
		{"code": "a", "concurrency": 0},
		{"code": "a", "concurrency": 10001},
	} {
		resp, got := s.do(t, http.MethodPost, "/api/dispatch-pools", body)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v: %v", body, got)
	}
}

func TestDefaultPoolNotDeletable(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	def, err := s.Store.PoolGetByCode(t.Context(), "default")
	require.NoError(t, err)
	resp, got := s.do(t, http.MethodDelete, "/api/dispatch-pools/"+def.ID, nil)
	require.Equal(t, http.StatusConflict, resp.StatusCode, got)
	resp, got = s.do(t, http.MethodPatch, "/api/dispatch-pools/"+def.ID, map[string]any{"concurrency": 8})
	require.Equal(t, http.StatusOK, resp.StatusCode, "the default pool is editable: %v", got)
	resp, got = s.do(t, http.MethodPatch, "/api/dispatch-pools/"+def.ID, map[string]any{"code": "other"})
	require.Equal(t, http.StatusConflict, resp.StatusCode, got)
}

func TestPoolInUseNotDeletable(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	_, pool := s.do(t, http.MethodPost, "/api/dispatch-pools", map[string]any{"code": "busy"})
	id := pool["id"].(string)
	resp, got := s.do(t, http.MethodPost, "/api/subscriptions", map[string]any{
		"code": "uses-pool", "target": "http://127.0.0.1:9/hook", "dispatchPoolId": id,
		"eventTypes": []map[string]any{{"eventTypeCode": "shop:*"}},
	})
	require.Equal(t, http.StatusCreated, resp.StatusCode, got)
	resp, got = s.do(t, http.MethodDelete, "/api/dispatch-pools/"+id, nil)
	require.Equal(t, http.StatusConflict, resp.StatusCode, got)
}
