package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/api"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/replay"
	"github.com/hooklane/hooklane/store/sqlitestore"
	"github.com/hooklane/hooklane/subscription"
)

// replayServer is a test server with the replay routes on, and a Worker to
// run the replays it starts.
func replayServer(t *testing.T) (*testServer, *replay.Worker) {
	t.Helper()
	var w *replay.Worker
	ts := newTestServer(t, func(c *api.Config) {
		st := c.Store.(*sqlitestore.Store)
		jobs := c.Jobs.(*dispatch.Lifecycle)
		subs := subGetter{st}
		c.Replays = replay.NewService(replay.ServiceConfig{Store: st, Subscriptions: subs, IDs: c.IDs, Retention: 168 * time.Hour})
		w = replay.NewWorker(replay.WorkerConfig{Store: st, Subscriptions: subs, Jobs: jobs, IDs: c.IDs, Owner: "test:1"})
	})
	return ts, w
}

func TestReplayRoutes(t *testing.T) {
	t.Parallel()
	ts, w := replayServer(t)
	resp, _ := ts.do(t, http.MethodPost, "/api/event-types", map[string]any{"code": "order.created", "name": "Order created"})
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	for range 3 {
		resp, _ = ts.do(t, http.MethodPost, "/api/events", map[string]any{
			"specversion": "1.0", "id": ts.IDs.New(), "source": "/shop", "type": "order.created", "data": map[string]any{},
		})
		require.Equal(t, http.StatusCreated, resp.StatusCode)
	}
	// The subscription comes after the events: a replay backfills it.
	resp, sub := ts.do(t, http.MethodPost, "/api/subscriptions", map[string]any{
		"code": "late", "eventTypes": []map[string]any{{"eventTypeCode": "order.created"}}, "target": "http://127.0.0.1:9/hook",
	})
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	subID := sub["id"].(string)
	since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano)

	resp, r := ts.do(t, http.MethodPost, "/api/subscriptions/"+subID+"/replay", map[string]any{"since": since})
	require.Equal(t, http.StatusAccepted, resp.StatusCode, r)
	require.Equal(t, "RUNNING", r["status"])
	require.Equal(t, "late", r["subscription"])
	require.Equal(t, subID, r["subscriptionId"])
	for _, k := range []string{"scanned", "matched", "created"} {
		require.InDelta(t, 0, r[k], 0, k)
	}
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, r["until"])
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, r["createdAt"])
	id := r["id"].(string)
	require.Equal(t, "/api/replays/"+id, resp.Header.Get("Location"))

	require.NoError(t, w.RunOnce(t.Context()))
	resp, got := ts.do(t, http.MethodGet, "/api/replays/"+id, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "COMPLETED", got["status"])
	require.InDelta(t, 3, got["created"], 0)
	require.InDelta(t, 3, got["scanned"], 0)

	resp, jobs := ts.do(t, http.MethodGet, "/api/dispatch-jobs?subscription=late", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Len(t, jobs["items"], 3)

	resp, list := ts.do(t, http.MethodGet, "/api/subscriptions/"+subID+"/replays", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Len(t, list["items"], 1)
	require.Nil(t, list["nextCursor"])
}

func TestReplayRoutesRefuseBadInput(t *testing.T) {
	t.Parallel()
	ts, _ := replayServer(t)
	resp, sub := ts.do(t, http.MethodPost, "/api/subscriptions", map[string]any{
		"code": "s", "eventTypes": []map[string]any{{"eventTypeCode": "order.*"}}, "target": "http://127.0.0.1:9/hook",
	})
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	path := "/api/subscriptions/" + sub["id"].(string) + "/replay"
	old := time.Now().Add(-200 * time.Hour).UTC().Format(time.RFC3339)
	recent := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	tests := []struct {
		name    string
		path    string
		body    any
		status  int
		pointer string
	}{
		{"malformed JSON", path, `{"since":`, http.StatusBadRequest, ""},
		{"since missing", path, map[string]any{}, http.StatusUnprocessableEntity, "/since"},
		{"since not a timestamp", path, map[string]any{"since": "yesterday"}, http.StatusUnprocessableEntity, "/since"},
		{"since wrong type", path, map[string]any{"since": 12}, http.StatusUnprocessableEntity, "/since"},
		{"since beyond retention", path, map[string]any{"since": old}, http.StatusUnprocessableEntity, "/since"},
		{"until before since", path, map[string]any{"since": recent, "until": old}, http.StatusUnprocessableEntity, "/until"},
		{"bad event type pattern", path, map[string]any{"since": recent, "eventTypes": []string{"Bad*"}}, http.StatusUnprocessableEntity, "/eventTypes/0"},
		{"unknown subscription", "/api/subscriptions/nope/replay", map[string]any{"since": recent}, http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, p := ts.do(t, http.MethodPost, tt.path, tt.body)
			require.Equal(t, tt.status, resp.StatusCode, p)
			require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
			if tt.pointer != "" {
				errs := p["errors"].([]any)
				require.Equal(t, tt.pointer, errs[0].(map[string]any)["pointer"], p)
			}
		})
	}
	resp, _ = ts.do(t, http.MethodGet, "/api/replays/nope", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = ts.do(t, http.MethodGet, "/api/subscriptions/nope/replays", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// subGetter reads subscriptions straight from the store.
type subGetter struct{ st *sqlitestore.Store }

func (g subGetter) Get(ctx context.Context, id string) (*subscription.Subscription, error) {
	return g.st.SubscriptionGetByID(ctx, id)
}
