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

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/router/pull"
	"github.com/hooklane/hooklane/stream"
)

// The secrets a subscription's target and headers carry in these tests;
// none may appear in a job answer to a role that cannot read the
// subscription, nor on the stream.
//

const (
	secretTarget = "http://hookuser:pa55word@127.0.0.1:9/hooks/T0/t0ken-in-path?sig=qu3ry-token"
	secretHeader = "Bearer hdr-s3cret"
)

var secretParts = []string{"pa55word", "hookuser", "t0ken-in-path", "qu3ry-token", "hdr-s3cret"} //nolint:gochecknoglobals // test fixture

func requireNoSecret(t *testing.T, what string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	for _, s := range secretParts {
		require.NotContains(t, string(b), s, "%s shows a secret", what)
	}
}

// maskingServer is a server with keys for every role, a subscription whose
// target and headers carry credentials, and one job of it whose failed
// attempt names the target in its error.
func maskingServer(t *testing.T, delivery string) (*testServer, string, string) {
	t.Helper()
	ts := newTestServer(t, func(c *serverConfig) {
		withKeys(t)(c)
		c.Pull = pull.New(pull.Config{Store: c.DB, Lifecycle: c.Jobs.(pull.Lifecycle), Lease: time.Minute})
	})
	admin := []string{"Authorization", "Bearer " + roleKeys["admin"]}
	resp, got := ts.do(t, http.MethodPost, "/api/event-types", `{"code":"order.created","name":"x"}`, admin...)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", got)
	resp, sub := ts.do(t, http.MethodPost, "/api/subscriptions", map[string]any{
		"code": "orders", "eventTypes": []any{map[string]any{"eventTypeCode": "order.created"}},
		"target": secretTarget, "headers": map[string]string{"Authorization": secretHeader, "X-Team": "orders"},
		"delivery": delivery,
	}, admin...)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", sub)
	resp, ev := ts.do(t, http.MethodPost, "/api/events",
		`{"specversion":"1.0","id":"e-1","source":"/t","type":"order.created","data":{}}`,
		"Authorization", "Bearer "+roleKeys["producer"], "Content-Type", "application/cloudevents+json")
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", ev)
	requireNoSecret(t, "the ingest answer", ev)
	jobID := ev["dispatchJobs"].([]any)[0].(map[string]any)["id"].(string)
	return ts, sub["id"].(string), jobID
}

// TestJobAnswersMaskSubscriptionSecrets: producer and worker keys get 403
// on the subscription, so its custom header values and the credentials in
// its target (userinfo, path, query) are masked in every job answer they
// get — also inside error messages; admin and viewer keys see them.
func TestJobAnswersMaskSubscriptionSecrets(t *testing.T) {
	t.Parallel()
	ts, subID, jobID := maskingServer(t, "push")
	ctx := context.Background()
	j, err := ts.Store.JobGetByID(ctx, jobID)
	require.NoError(t, err)

	msg := `send: Post "http://hookuser:***@127.0.0.1:9/hooks/T0/t0ken-in-path?sig=qu3ry-token": dial tcp 127.0.0.1:9: connect: connection refused`
	j.LastError = &msg
	j.Attempts = append(j.Attempts, dispatch.Attempt{Attempt: 1, StartedAt: j.CreatedAt, Error: msg})
	j.AttemptCount = 1
	ev := j.StatusEvent(ts.IDs.New(), stream.TypeDispatchFailed, j.UpdatedAt)
	ev.Data.Error = msg
	require.NoError(t, ts.Store.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: j, Events: []stream.Event{ev}}))

	for _, role := range []string{"producer", "worker"} {
		key := []string{"Authorization", "Bearer " + roleKeys[role]}
		resp, _ := ts.do(t, http.MethodGet, "/api/subscriptions/"+subID, nil, key...)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, role)

		resp, got := ts.do(t, http.MethodGet, "/api/dispatch-jobs/"+jobID+"?include=history", nil, key...)
		require.Equal(t, http.StatusOK, resp.StatusCode, role)
		requireNoSecret(t, role+" GET job", got)
		require.Equal(t, map[string]any{"Authorization": "***", "X-Team": "***"}, got["headers"], role)
		require.Equal(t, "http://***@127.0.0.1:9/***", got["targetUrl"], role)
		require.Contains(t, got["lastError"], "connection refused", "the rest of the error stays")
		require.NotEmpty(t, got["history"])

		resp, list := ts.do(t, http.MethodGet, "/api/dispatch-jobs", nil, key...)
		require.Equal(t, http.StatusOK, resp.StatusCode, role)
		requireNoSecret(t, role+" GET jobs", list)
		require.Len(t, list["items"], 1)
	}
	for _, role := range []string{"admin", "viewer"} {
		resp, got := ts.do(t, http.MethodGet, "/api/dispatch-jobs/"+jobID, nil, "Authorization", "Bearer "+roleKeys[role])
		require.Equal(t, http.StatusOK, resp.StatusCode, role)
		require.Equal(t, secretTarget, got["targetUrl"], role)
		require.Equal(t, secretHeader, got["headers"].(map[string]any)["Authorization"], role)
		require.Equal(t, msg, got["lastError"], role)
	}
	// The stored job is untouched.
	stored, err := ts.Store.JobGetByID(ctx, jobID)
	require.NoError(t, err)
	require.Equal(t, secretTarget, stored.TargetURL)
}

// TestTaskJobAnswerMasksHeaders: a TASK job's answers to a producer mask
// its headers and target credentials as well (every producer may read it).
func TestTaskJobAnswerMasksHeaders(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withKeys(t))
	key := []string{"Authorization", "Bearer " + roleKeys["producer"]}
	resp, got := ts.do(t, http.MethodPost, "/api/dispatch-jobs", map[string]any{
		"code": "send.mail", "targetUrl": secretTarget, "payload": map[string]any{"to": "a@example.com"},
		"headers": map[string]string{"Authorization": secretHeader},
	}, key...)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", got)
	requireNoSecret(t, "POST task job", got)
	require.True(t, strings.HasPrefix(got["secret"].(string), "whsec_"), "the generated signing secret is still shown once")
	resp, got = ts.do(t, http.MethodGet, "/api/dispatch-jobs/"+got["id"].(string), nil, key...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	requireNoSecret(t, "GET task job", got)
}

// TestPullAnswersMaskSubscriptionSecrets: a worker's claim, complete and
// fail answers mask the subscription's headers and target credentials.
func TestPullAnswersMaskSubscriptionSecrets(t *testing.T) {
	t.Parallel()
	ts, subID, _ := maskingServer(t, "pull")
	key := []string{"Authorization", "Bearer " + roleKeys["worker"]}
	resp, got := ts.do(t, http.MethodGet, "/api/subscriptions/"+subID+"/jobs/next?worker_id=w1", nil, key...)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", got)
	requireNoSecret(t, "claim", got)
	item := got["items"].([]any)[0].(map[string]any)
	require.Equal(t, "***", item["headers"].(map[string]any)["Authorization"])
	require.NotNil(t, item["event"], "the claim still carries the event")
	resp, got = ts.do(t, http.MethodPost, "/api/dispatch-jobs/"+item["id"].(string)+"/fail",
		map[string]any{"workerId": "w1", "executionTimeMs": 5, "errorMessage": "boom"}, key...)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", got)
	requireNoSecret(t, "fail", got)
}

// TestStreamMasksURLsInErrors: a status event's error that names a target
// with credentials reaches every stream client masked, whatever its role.
func TestStreamMasksURLsInErrors(t *testing.T) {
	t.Parallel()
	b := setupStream(t, stream.HubConfig{}, nil)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, b.ts.URL+"/api/stream", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b.waitClients(t, 1)
	e := b.newEvent(stream.TypeDispatchFailed, "job-1", stream.Data{
		JobID: "job-1", Status: "PENDING",
		Error: `send: Post "` + secretTarget + `": dial tcp 127.0.0.1:9: connect: connection refused`,
	})
	b.write(t, e)
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		for _, s := range secretParts {
			require.NotContains(t, line, s)
		}
		require.Contains(t, line, `http://***@127.0.0.1:9/***`)
		require.Contains(t, line, "connection refused")
		break
	}
}

// TestStreamWSMasksURLsInErrors: the same over /api/stream/ws.
func TestStreamWSMasksURLsInErrors(t *testing.T) {
	t.Parallel()
	b := setupStream(t, stream.HubConfig{}, nil)
	conn := dialWS(t, b)
	wsSend(t, conn, map[string]any{"action": "subscribe", "subscriptionId": "s1"})
	require.Equal(t, "subscribed", wsRead(t, conn).Status)
	b.write(t, b.newEvent(stream.TypeDispatchFailed, "job-1", stream.Data{
		JobID: "job-1", Status: "PENDING",
		Error: `send: Post "` + secretTarget + `": dial tcp 127.0.0.1:9: connect: connection refused`,
	}))
	m := wsRead(t, conn)
	require.NotNil(t, m.Event)
	requireNoSecret(t, "the websocket event", m.Event)
	require.Contains(t, m.Event["data"].(map[string]any)["error"], "http://***@127.0.0.1:9/***")
}
