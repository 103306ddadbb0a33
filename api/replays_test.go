package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/api"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
	"github.com/hooklane/hooklane/subscription/replay"
)

// replayServer is a test server with the replay routes on, and a Worker to
// run the replays it starts.
func replayServer(t *testing.T) (*testServer, *replay.Worker) {
	t.Helper()
	var w *replay.Worker
	ts := newTestServer(t, func(c *serverConfig) {
		st := c.DB
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

// TestReplayOnTheStream reads replay.started and replay.completed back from
// the stream, through its types and subscriptions filters.
func TestReplayOnTheStream(t *testing.T) {
	t.Parallel()
	hub := stream.NewHub(stream.HubConfig{})
	t.Cleanup(hub.Close)
	var w *replay.Worker
	ts := newTestServer(t, func(c *serverConfig) {
		st := c.DB
		subs := subGetter{st}
		c.Stream = api.StreamConfig{Hub: hub, Retry: 50 * time.Millisecond, PingInterval: time.Minute}
		c.Replays = replay.NewService(replay.ServiceConfig{Store: st, Subscriptions: subs, IDs: c.IDs, Retention: time.Hour})
		w = replay.NewWorker(replay.WorkerConfig{Store: st, Subscriptions: subs, Jobs: c.Jobs.(*dispatch.Lifecycle), IDs: c.IDs, Owner: "test:1"})
	})
	for _, code := range []string{"a", "b"} {
		resp, _ := ts.do(t, http.MethodPost, "/api/subscriptions", map[string]any{
			"code": code, "eventTypes": []map[string]any{{"eventTypeCode": "order.*"}}, "target": "http://127.0.0.1:9/hook",
		})
		require.Equal(t, http.StatusCreated, resp.StatusCode)
	}
	start := time.Now().UTC().Add(-time.Second).Format(time.RFC3339Nano)
	var replayIDs []string
	for _, code := range []string{"a", "b"} {
		_, list := ts.do(t, http.MethodGet, "/api/subscriptions?limit=10", nil)
		for _, it := range list["items"].([]any) {
			if s := it.(map[string]any); s["code"] == code {
				resp, r := ts.do(t, http.MethodPost, "/api/subscriptions/"+s["id"].(string)+"/replay", map[string]any{"since": start})
				require.Equal(t, http.StatusAccepted, resp.StatusCode, r)
				replayIDs = append(replayIDs, r["id"].(string))
			}
		}
	}
	require.NoError(t, w.RunOnce(t.Context()))
	// The tailer sets the stream's frontier, up to which history is sent.
	tailer := stream.NewTailer(stream.TailerConfig{Store: ts.Store, Hub: hub, PollInterval: 50 * time.Millisecond})
	tctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tailer.Run(tctx) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done)
	})

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/api/stream?types=replay.*&subscriptions=b&since="+start, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var got []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for len(got) < 2 && sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var ev map[string]any
			require.NoError(t, json.Unmarshal([]byte(data), &ev))
			got = append(got, ev)
		}
	}
	require.Len(t, got, 2, "scan: %v", sc.Err())
	require.Equal(t, "replay.started", got[0]["type"])
	require.Equal(t, "replay.completed", got[1]["type"])
	for _, ev := range got {
		require.Equal(t, replayIDs[1], ev["subject"], "only subscription b's replay passes the filter")
		data := ev["data"].(map[string]any)
		require.Equal(t, "b", data["subscription"])
		for _, k := range []string{"scanned", "matched", "created"} {
			require.Contains(t, data, k)
		}
	}
	require.Equal(t, "COMPLETED", got[1]["data"].(map[string]any)["status"])
}
