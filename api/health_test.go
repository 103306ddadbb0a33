package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/health"
	"github.com/hooklane/hooklane/stream"
)

// fixedNow is the clock of the endpoint health tests: a whole minute and 30 s.
func fixedNow() time.Time { return time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC) }

func newHealthServer(t *testing.T) *testServer {
	t.Helper()
	return newTestServer(t, func(c *serverConfig) { c.NowFunc = fixedNow })
}

// createSub creates a subscription and returns its id.
func (s *testServer) createSub(t *testing.T, body map[string]any) string {
	t.Helper()
	resp, out := s.do(t, http.MethodPost, "/api/subscriptions", body)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", out)
	return out["id"].(string)
}

func TestSubscriptionCarriesCircuitAndStatusReason(t *testing.T) {
	t.Parallel()
	ts := newHealthServer(t)
	ctx := context.Background()
	push := ts.createSub(t, map[string]any{
		"code": "orders", "target": "http://127.0.0.1:9/hook",
		"eventTypes": []any{map[string]any{"eventTypeCode": "shop.order.created"}},
	})
	pull := ts.createSub(t, map[string]any{
		"code": "worker", "delivery": "pull",
		"eventTypes": []any{map[string]any{"eventTypeCode": "shop.order.created"}},
	})

	_, got := ts.do(t, http.MethodGet, "/api/subscriptions/"+push, nil)
	require.Equal(t, map[string]any{"state": "CLOSED", "consecutiveFailures": float64(0), "openedAt": nil, "nextProbeAt": nil}, got["circuit"])
	require.Contains(t, got, "statusReason")
	require.Nil(t, got["statusReason"])
	_, got = ts.do(t, http.MethodGet, "/api/subscriptions/"+pull, nil)
	require.Contains(t, got, "circuit")
	require.Nil(t, got["circuit"], "a pull subscription has no circuit")

	// An open circuit as the lifecycle stores it; its probe is due in 10 s.
	opened := fixedNow().Add(-20 * time.Second)
	probe := fixedNow().Add(10 * time.Second)
	c := &dispatch.Circuit{
		SubscriptionID: push, State: dispatch.CircuitOpen, ConsecutiveFailures: 10,
		OpenedAt: &opened, NextProbeAt: &probe, Cooldown: 30 * time.Second, UpdatedAt: opened,
	}
	require.NoError(t, ts.Store.CircuitUpdate(ctx, &dispatch.CircuitUpdateParams{Circuit: c}))
	want := map[string]any{
		"state": "OPEN", "consecutiveFailures": float64(10),
		"openedAt": "2026-03-01T12:00:10.000Z", "nextProbeAt": "2026-03-01T12:00:40.000Z",
	}
	_, got = ts.do(t, http.MethodGet, "/api/subscriptions/"+push, nil)
	require.Equal(t, want, got["circuit"])
	_, list := ts.do(t, http.MethodGet, "/api/subscriptions", nil)
	items := list["items"].([]any)
	require.Len(t, items, 2)
	for _, it := range items {
		m := it.(map[string]any)
		if m["id"] == push {
			require.Equal(t, want, m["circuit"], "the list carries the circuits too")
		} else {
			require.Nil(t, m["circuit"])
		}
	}

	// Past nextProbeAt the circuit shows HALF_OPEN.
	probe = fixedNow().Add(-time.Second)
	c.NextProbeAt = &probe
	require.NoError(t, ts.Store.CircuitUpdate(ctx, &dispatch.CircuitUpdateParams{Circuit: c}))
	_, got = ts.do(t, http.MethodGet, "/api/subscriptions/"+push, nil)
	require.Equal(t, "HALF_OPEN", got["circuit"].(map[string]any)["state"])

	// No request writes statusReason or circuit.
	resp, got := ts.do(t, http.MethodPatch, "/api/subscriptions/"+push, map[string]any{
		"statusReason": "mine", "circuit": map[string]any{"state": "CLOSED"}, "name": "Orders",
	})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Nil(t, got["statusReason"])
	require.Equal(t, "HALF_OPEN", got["circuit"].(map[string]any)["state"])
}

func TestResumeAfterAutoDisableClosesCircuitAndClearsReason(t *testing.T) {
	t.Parallel()
	ts := newHealthServer(t)
	ctx := context.Background()
	id := ts.createSub(t, map[string]any{
		"code": "orders", "target": "http://127.0.0.1:9/hook",
		"eventTypes": []any{map[string]any{"eventTypeCode": "shop.order.created"}},
	})
	opened, probe := fixedNow().Add(-time.Hour), fixedNow().Add(time.Minute)
	since := fixedNow().Add(-120 * time.Hour)
	require.NoError(t, ts.Store.CircuitUpdate(ctx, &dispatch.CircuitUpdateParams{Circuit: &dispatch.Circuit{
		SubscriptionID: id, State: dispatch.CircuitOpen, ConsecutiveFailures: 40, OpenedAt: &opened, NextProbeAt: &probe,
		Cooldown: 10 * time.Minute, FailingSince: &since, UpdatedAt: opened,
	}}))
	reason := "disabled by the gateway at 2026-03-01T12:00:00.000Z: every delivery attempt failed since 2026-02-24T12:00:30.000Z"
	changed, err := ts.Store.SubscriptionDisable(ctx, &dispatch.SubscriptionDisableParams{SubscriptionID: id, Reason: reason, At: fixedNow()})
	require.NoError(t, err)
	require.True(t, changed)

	_, got := ts.do(t, http.MethodGet, "/api/subscriptions/"+id, nil)
	require.Equal(t, "PAUSED", got["status"])
	require.Equal(t, reason, got["statusReason"])

	resp, got := ts.do(t, http.MethodPost, "/api/subscriptions/"+id+"/resume", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "ACTIVE", got["status"])
	require.Nil(t, got["statusReason"])
	require.Equal(t, map[string]any{"state": "CLOSED", "consecutiveFailures": float64(0), "openedAt": nil, "nextProbeAt": nil}, got["circuit"])
	c, err := ts.Store.CircuitGet(ctx, id)
	require.NoError(t, err)
	require.Nil(t, c.FailingSince, "the auto-disable clock starts over")

	events, err := ts.Store.StatusEventListBySubject(ctx, id)
	require.NoError(t, err)
	require.Len(t, events, 1)
	require.Equal(t, stream.TypeSubscriptionCircuitClosed, events[0].Type)
	require.Equal(t, "orders", events[0].Data.Subscription)

	// A pause by an operator gives no reason.
	_, got = ts.do(t, http.MethodPost, "/api/subscriptions/"+id+"/pause", nil)
	require.Equal(t, "PAUSED", got["status"])
	require.Nil(t, got["statusReason"])
}

func TestSubscriptionHealth(t *testing.T) {
	t.Parallel()
	ts := newHealthServer(t)
	ctx := context.Background()
	id := ts.createSub(t, map[string]any{
		"code": "orders", "target": "http://127.0.0.1:9/hook",
		"eventTypes": []any{map[string]any{"eventTypeCode": "shop.order.created"}},
	})

	resp, got := ts.do(t, http.MethodGet, "/api/subscriptions/"+id+"/health", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, map[string]any{
		"subscription":  "orders",
		"circuit":       map[string]any{"state": "CLOSED", "consecutiveFailures": float64(0), "openedAt": nil, "nextProbeAt": nil},
		"lastSuccessAt": nil, "lastFailureAt": nil, "lastError": nil,
		"windows": []any{
			map[string]any{"window": "1h", "attempts": float64(0), "succeeded": float64(0), "failed": float64(0), "successRate": nil, "latencyMs": nil},
			map[string]any{"window": "24h", "attempts": float64(0), "succeeded": float64(0), "failed": float64(0), "successRate": nil, "latencyMs": nil},
		},
	}, got)

	minute := fixedNow().Truncate(time.Minute)
	lat := func(i int, n int64) []int64 {
		l := make([]int64, health.Buckets())
		l[i] = n
		return l
	}
	success, failure := fixedNow().Add(-time.Second), fixedNow().Add(-2*time.Hour)
	require.NoError(t, ts.Store.HealthRecord(ctx, &health.RecordParams{
		Buckets: []health.Bucket{
			{SubscriptionID: id, Start: minute, Attempts: 40, Succeeded: 39, Failed: 1, Answered: 40, Latency: lat(11, 40)},
			{SubscriptionID: id, Start: minute.Add(-2 * time.Hour), Attempts: 10, Failed: 10, Latency: lat(0, 0)},
		},
		Lasts: []health.Last{{SubscriptionID: id, LastSuccessAt: &success, LastFailureAt: &failure, LastError: "HTTP 503"}},
	}))
	_, got = ts.do(t, http.MethodGet, "/api/subscriptions/"+id+"/health", nil)
	require.Equal(t, "2026-03-01T12:00:29.000Z", got["lastSuccessAt"])
	require.Equal(t, "2026-03-01T10:00:30.000Z", got["lastFailureAt"])
	require.Equal(t, "HTTP 503", got["lastError"])
	windows := got["windows"].([]any)
	hour, day := windows[0].(map[string]any), windows[1].(map[string]any)
	require.Equal(t, map[string]any{
		"window": "1h", "attempts": float64(40), "succeeded": float64(39), "failed": float64(1),
		"successRate": 0.975, "latencyMs": map[string]any{"p50": float64(85), "p95": float64(99), "p99": float64(100)},
	}, hour)
	require.InDelta(t, 50, day["attempts"], 0)
	require.InDelta(t, 11, day["failed"], 0)
	require.InDelta(t, 0.78, day["successRate"], 1e-9)

	resp, _ = ts.do(t, http.MethodGet, "/api/subscriptions/missing/health", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}
