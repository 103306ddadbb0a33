package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/queue"
)

// createTask posts a TASK job and returns its id.
func createTask(t *testing.T, s *testServer, body map[string]any) string {
	t.Helper()
	resp, got := s.do(t, http.MethodPost, "/api/dispatch-jobs", body)
	require.Equal(t, http.StatusCreated, resp.StatusCode, got)
	return got["id"].(string)
}

func taskBody(extra ...any) map[string]any {
	b := map[string]any{"code": "billing:invoice:send", "targetUrl": "http://127.0.0.1:9/hook", "payload": map[string]any{"n": 1}}
	for i := 0; i+1 < len(extra); i += 2 {
		b[extra[i].(string)] = extra[i+1]
	}
	return b
}

// setJob rewrites a stored job (to put it in a state only the router
// reaches).
func setJob(t *testing.T, s *testServer, id string, edit func(*dispatch.Job)) *dispatch.Job {
	t.Helper()
	j, err := s.Store.JobGetByID(context.Background(), id)
	require.NoError(t, err)
	edit(j)
	require.NoError(t, s.Store.JobUpdate(context.Background(), &dispatch.JobUpdateParams{Job: j}))
	return j
}

func receiveIDs(t *testing.T, s *testServer) []string {
	t.Helper()
	msgs, err := s.Queue.Receive(context.Background(), queue.ReceiveParams{Max: queue.MaxBatch})
	require.NoError(t, err)
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		c, err := dispatch.ReadMessage(m.Body)
		require.NoError(t, err)
		ids[i] = c.JobID
		require.NoError(t, s.Queue.Delete(context.Background(), m.ReceiptHandle))
	}
	return ids
}

func TestTaskJobCreate(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	resp, got := s.do(t, http.MethodPost, "/api/dispatch-jobs", taskBody("messageGroup", "inv-1", "mode", "BLOCK_ON_ERROR"))
	require.Equal(t, http.StatusCreated, resp.StatusCode, got)
	require.Equal(t, "/api/dispatch-jobs/"+got["id"].(string), resp.Header.Get("Location"))
	require.Equal(t, "TASK", got["kind"])
	require.Equal(t, "QUEUED", got["status"])
	require.Equal(t, "BLOCK_ON_ERROR", got["mode"])
	require.Equal(t, "inv-1", got["messageGroup"])
	require.True(t, strings.HasPrefix(got["secret"].(string), "whsec_"), "generated secret returned once")
	require.Equal(t, []string{got["id"].(string)}, receiveIDs(t, s))

	_, again := s.do(t, http.MethodGet, "/api/dispatch-jobs/"+got["id"].(string), nil)
	require.NotContains(t, again, "secret", "the secret is shown only at creation")

	given := "whsec_" + "c2VjcmV0LXNlY3JldC1zZWNyZXQ="
	resp, got = s.do(t, http.MethodPost, "/api/dispatch-jobs", taskBody("secret", given))
	require.Equal(t, http.StatusCreated, resp.StatusCode, got)
	require.NotContains(t, got, "secret", "a given secret is not echoed")

	for _, body := range []map[string]any{
		{"targetUrl": "http://127.0.0.1:9/", "payload": 1},
		{"code": "x", "targetUrl": "http://127.0.0.1:9/"},
		taskBody("secret", "nope"),
		taskBody("timeoutSeconds", 301),
	} {
		resp, got := s.do(t, http.MethodPost, "/api/dispatch-jobs", body)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, got)
	}
}

func TestTaskJobPrivateTargetRefused(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, func(c *serverConfig) { c.AllowPrivateTargets = false })
	for _, target := range []string{"http://127.0.0.1/", "http://10.0.0.1/", "http://[::1]/", "http://[::ffff:127.0.0.1]/", "http://169.254.169.254/", "http://100.64.0.1/", "http://localhost/"} {
		resp, got := s.do(t, http.MethodPost, "/api/dispatch-jobs", taskBody("targetUrl", target))
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%s: %v", target, got)
	}
}

func TestJobRetry(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	id := createTask(t, s, taskBody("retry", map[string]any{"maxAttempts": 3}))
	receiveIDs(t, s)

	resp, got := s.do(t, http.MethodPost, "/api/dispatch-jobs/"+id+"/retry", nil)
	require.Equal(t, http.StatusConflict, resp.StatusCode, "a QUEUED job cannot be retried: %v", got)

	now := time.Now().UTC()
	setJob(t, s, id, func(j *dispatch.Job) {
		j.Status, j.AttemptCount, j.UpdatedAt = dispatch.StatusError, 3, now
		j.Attempts = []dispatch.Attempt{{Attempt: 1, StartedAt: now}, {Attempt: 2, StartedAt: now}, {Attempt: 3, StartedAt: now}}
	})
	resp, got = s.do(t, http.MethodPost, "/api/dispatch-jobs/"+id+"/retry", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, got)
	require.Equal(t, "QUEUED", got["status"])
	require.EqualValues(t, 3, got["attemptCount"], "attemptCount keeps counting")
	require.EqualValues(t, 6, got["maxAttempts"], "maxAttempts more attempts")
	require.Equal(t, []string{id}, receiveIDs(t, s))

	j, err := s.Store.JobGetByID(context.Background(), id)
	require.NoError(t, err)
	require.Len(t, j.Attempts, 3, "an operator retry is no attempt (API.md §5)")
	require.NotNil(t, j.RetriedAt)
	require.WithinDuration(t, time.Now(), j.AgeStart(), 10*time.Second, "the max-age window restarts at the retry")

	setJob(t, s, id, func(j *dispatch.Job) { j.Status = dispatch.StatusCancelled })
	resp, got = s.do(t, http.MethodPost, "/api/dispatch-jobs/"+id+"/retry", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, got)

	resp, _ = s.do(t, http.MethodPost, "/api/dispatch-jobs/01NOPE/retry", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestJobCancel(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	for _, st := range []dispatch.Status{dispatch.StatusPending, dispatch.StatusQueued, dispatch.StatusInProgress, dispatch.StatusError} {
		id := createTask(t, s, taskBody())
		setJob(t, s, id, func(j *dispatch.Job) { j.Status = st })
		resp, got := s.do(t, http.MethodPost, "/api/dispatch-jobs/"+id+"/cancel", nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %v", st, got)
		require.Equal(t, "CANCELLED", got["status"])
	}
	for _, st := range []dispatch.Status{dispatch.StatusCompleted, dispatch.StatusCancelled} {
		id := createTask(t, s, taskBody())
		setJob(t, s, id, func(j *dispatch.Job) { j.Status = st })
		resp, got := s.do(t, http.MethodPost, "/api/dispatch-jobs/"+id+"/cancel", nil)
		require.Equal(t, http.StatusConflict, resp.StatusCode, "%s: %v", st, got)
	}
}

// TestCancelReleasesBlockedGroup: cancelling the ERROR job that holds a
// BLOCK_ON_ERROR group queues the next held job at once.
func TestCancelReleasesBlockedGroup(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	body := taskBody("mode", "BLOCK_ON_ERROR", "messageGroup", "g1")
	first := createTask(t, s, body)
	second := createTask(t, s, body)
	receiveIDs(t, s)
	setJob(t, s, first, func(j *dispatch.Job) { j.Status = dispatch.StatusError })
	far := time.Now().Add(time.Hour).UTC()
	setJob(t, s, second, func(j *dispatch.Job) {
		j.Status, j.BlockedBy, j.NextAttemptAt = dispatch.StatusPending, first, &far
	})
	_, got := s.do(t, http.MethodGet, "/api/dispatch-jobs/"+second, nil)
	require.Equal(t, first, got["blockedBy"], "the hold is visible on the job")

	resp, got := s.do(t, http.MethodPost, "/api/dispatch-jobs/"+first+"/cancel", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, got)
	_, got = s.do(t, http.MethodGet, "/api/dispatch-jobs/"+second, nil)
	require.Equal(t, "QUEUED", got["status"])
	require.NotContains(t, got, "blockedBy")
	require.Equal(t, []string{second}, receiveIDs(t, s))
}

func TestBulkRedrive(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	var ids []string
	for range 3 {
		id := createTask(t, s, taskBody())
		setJob(t, s, id, func(j *dispatch.Job) { j.Status = dispatch.StatusError })
		ids = append(ids, id)
	}
	createTask(t, s, taskBody()) // QUEUED: not redriven
	receiveIDs(t, s)
	resp, got := s.do(t, http.MethodPost, "/api/dispatch-jobs/retry", map[string]any{"status": "ERROR"})
	require.Equal(t, http.StatusOK, resp.StatusCode, got)
	require.Equal(t, map[string]any{"count": float64(3)}, got)
	require.ElementsMatch(t, ids, receiveIDs(t, s))

	resp, got = s.do(t, http.MethodPost, "/api/dispatch-jobs/retry", map[string]any{"status": "COMPLETED"})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, got)
}
