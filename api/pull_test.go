package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/router/pull"
)

// pullSub creates a pull subscription to order.created with the given mode
// and retry.maxAttempts and returns its id.
func pullSub(t testing.TB, s *testServer, mode string, maxAttempts int) string {
	t.Helper()
	resp, got := s.do(t, http.MethodPost, "/api/subscriptions", map[string]any{
		"code": "puller", "eventTypes": []any{map[string]any{"eventTypeCode": "order.created"}},
		"delivery": "pull", "mode": mode,
		"retry": map[string]any{"maxAttempts": maxAttempts, "initialBackoffSeconds": 60, "maxBackoffSeconds": 60},
	})
	require.Equal(t, http.StatusCreated, resp.StatusCode, got)
	return got["id"].(string)
}

func newPullServer(t *testing.T, mode string, maxAttempts int) (*testServer, string) {
	t.Helper()
	s := newTestServer(t, func(c *serverConfig) {
		c.Pull = pull.New(pull.Config{Store: c.DB, Lifecycle: c.Jobs.(pull.Lifecycle), Lease: time.Minute})
	})
	createType(t, s, "order.created")
	return s, pullSub(t, s, mode, maxAttempts)
}

// ingestOrder posts one order.created event with the given extensions and
// returns the id of its one dispatch job.
func ingestOrder(t testing.TB, s *testServer, id string, ext ...string) string {
	t.Helper()
	ev := map[string]any{"specversion": "1.0", "id": id, "source": "/test", "type": "order.created", "data": map[string]any{"n": id}}
	for i := 0; i+1 < len(ext); i += 2 {
		ev[ext[i]] = ext[i+1]
	}
	resp, got := s.do(t, http.MethodPost, "/api/events", ev, "Content-Type", "application/cloudevents+json")
	require.Equal(t, http.StatusCreated, resp.StatusCode, got)
	jobs := got["dispatchJobs"].([]any)
	require.Len(t, jobs, 1)
	return jobs[0].(map[string]any)["id"].(string)
}

// claim calls the claim endpoint and returns the status and claimed jobs.
func claim(t testing.TB, s *testServer, sub, worker, query string) (int, []map[string]any) {
	t.Helper()
	resp, got := s.do(t, http.MethodGet, claimPath(sub, worker, query), nil)
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	return resp.StatusCode, claimItems(got)
}

func claimPath(sub, worker, query string) string {
	return "/api/subscriptions/" + sub + "/jobs/next?worker_id=" + worker + query
}

// claimItems returns the items of a claim's answer.
func claimItems(got map[string]any) []map[string]any {
	var out []map[string]any
	for _, it := range got["items"].([]any) {
		out = append(out, it.(map[string]any))
	}
	return out
}

func claimedIDs(items []map[string]any) []string {
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it["id"].(string)
	}
	return ids
}

func report(t testing.TB, s *testServer, job, verb, worker string, extra ...any) (int, map[string]any) {
	t.Helper()
	body := map[string]any{"workerId": worker, "executionTimeMs": 12}
	for i := 0; i+1 < len(extra); i += 2 {
		body[extra[i].(string)] = extra[i+1]
	}
	resp, got := s.do(t, http.MethodPost, "/api/dispatch-jobs/"+job+"/"+verb, body)
	return resp.StatusCode, got
}

func TestPullClaimParams(t *testing.T) {
	t.Parallel()
	s, sub := newPullServer(t, "IMMEDIATE", 3)
	for _, q := range []string{"", "?max=2", "?worker_id="} {
		resp, got := s.do(t, http.MethodGet, "/api/subscriptions/"+sub+"/jobs/next"+q, nil)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %v", q, got)
	}
	for _, q := range []string{"&max=x", "&wait=soon", "&wait=NaN"} {
		code, _ := claim(t, s, sub, "w1", q)
		require.Equal(t, http.StatusBadRequest, code, q)
	}
	for _, q := range []string{"&max=0", "&wait=-1", "&wait=-2s"} {
		code, _ := claim(t, s, sub, "w1", q)
		require.Equal(t, http.StatusUnprocessableEntity, code, "an out-of-range number is 422: %s", q)
	}
	for _, q := range []string{"&max=101", "&max=99999999999999999999999"} {
		code, _ := claim(t, s, sub, "w1", q)
		require.Equal(t, http.StatusNoContent, code, "a max above the limit is clamped: %s", q)
	}
	code, _ := claim(t, s, "01JD0000000000000000000000", "w1", "")
	require.Equal(t, http.StatusNotFound, code)
	code, _ = claim(t, s, sub, "w1", "")
	require.Equal(t, http.StatusNoContent, code, "nothing due, no wait")
}

func TestPullClaimAndComplete(t *testing.T) {
	t.Parallel()
	s, sub := newPullServer(t, "IMMEDIATE", 3)
	job := ingestOrder(t, s, "e1", "region", "eu")
	code, items := claim(t, s, sub, "host:1", "&max=5")
	require.Equal(t, http.StatusOK, code)
	require.Len(t, items, 1)
	it := items[0]
	require.Equal(t, job, it["id"])
	require.Equal(t, "IN_PROGRESS", it["status"])
	require.Equal(t, "host:1", it["worker"])
	require.NotEmpty(t, it["leaseExpiresAt"])
	require.InDelta(t, 1, it["attemptCount"], 0)
	require.Equal(t, "e1", it["event"].(map[string]any)["id"])
	require.Equal(t, "eu", it["event"].(map[string]any)["region"])

	// Heartbeat: the holder extends, anyone else is refused.
	resp, got := s.do(t, http.MethodPost, "/api/dispatch-jobs/"+job+"/heartbeat", map[string]any{"workerId": "host:1"})
	require.Equal(t, http.StatusOK, resp.StatusCode, got)
	require.NotEmpty(t, got["leaseExpiresAt"])
	resp, _ = s.do(t, http.MethodPost, "/api/dispatch-jobs/"+job+"/heartbeat", map[string]any{"workerId": "host:2"})
	require.Equal(t, http.StatusConflict, resp.StatusCode)

	// GET /api/workers shows the holder with its job in flight.
	resp, got = s.do(t, http.MethodGet, "/api/workers", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	ws := got["items"].([]any)
	require.Len(t, ws, 2, "both workers were seen, sorted by id")
	require.Equal(t, "host:1", ws[0].(map[string]any)["workerId"])
	require.Equal(t, []any{job}, ws[0].(map[string]any)["inFlight"])
	require.NotEmpty(t, ws[0].(map[string]any)["lastSeenAt"])
	require.Equal(t, "host:2", ws[1].(map[string]any)["workerId"])
	require.Equal(t, []any{}, ws[1].(map[string]any)["inFlight"])

	code, got = report(t, s, job, "complete", "host:2")
	require.Equal(t, http.StatusConflict, code, "a foreign worker: %v", got)
	code, got = report(t, s, job, "complete", "host:1", "statusCode", 200)
	require.Equal(t, http.StatusOK, code, got)
	require.Equal(t, "COMPLETED", got["status"])
	attempts := got["attempts"].([]any)
	require.Len(t, attempts, 2)
	require.Equal(t, "PICKED", attempts[0].(map[string]any)["action"])
	last := attempts[1].(map[string]any)
	require.Equal(t, "COMPLETED", last["action"])
	require.Equal(t, "host:1", last["worker"])
	require.InDelta(t, 12, last["durationMs"], 0)
	require.InDelta(t, 200, last["statusCode"], 0)

	// A repeat answers 200 and records nothing new; others still get 409.
	code, got = report(t, s, job, "complete", "host:1")
	require.Equal(t, http.StatusOK, code)
	require.Len(t, got["attempts"], 2)
	code, _ = report(t, s, job, "complete", "host:2")
	require.Equal(t, http.StatusConflict, code)
	code, _ = report(t, s, job, "fail", "host:1", "errorMessage", "late")
	require.Equal(t, http.StatusConflict, code, "a completed job cannot fail")

	resp, got = s.do(t, http.MethodGet, "/api/workers", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, []any{}, got["items"].([]any)[0].(map[string]any)["inFlight"])
}

func TestPullFail(t *testing.T) {
	t.Parallel()
	s, sub := newPullServer(t, "IMMEDIATE", 2)
	job := ingestOrder(t, s, "e1")
	_, items := claim(t, s, sub, "w1", "")
	require.Equal(t, []string{job}, claimedIDs(items))

	code, _ := report(t, s, job, "fail", "w2", "errorMessage", "boom")
	require.Equal(t, http.StatusConflict, code, "a foreign worker")
	code, got := report(t, s, job, "fail", "w1", "errorMessage", "boom", "statusCode", 500)
	require.Equal(t, http.StatusOK, code, got)
	require.Equal(t, true, got["retryScheduled"])
	require.NotEmpty(t, got["nextAttemptAt"])
	j := got["job"].(map[string]any)
	require.Equal(t, "PENDING", j["status"])
	require.Equal(t, "boom", j["lastError"])
	require.Equal(t, got["nextAttemptAt"], j["nextAttemptAt"])
	require.Len(t, j["attempts"], 2)

	code, again := report(t, s, job, "fail", "w1", "errorMessage", "boom")
	require.Equal(t, http.StatusOK, code, "a repeat")
	require.Equal(t, true, again["retryScheduled"])
	require.Len(t, again["job"].(map[string]any)["attempts"], 2, "a repeat records nothing")
	code, _ = report(t, s, job, "complete", "w1")
	require.Equal(t, http.StatusConflict, code, "not IN_PROGRESS and not a repeat of complete")

	// Make the retry due (the pending poller's move), claim the last
	// attempt and fail it: no attempt left → ERROR.
	setJob(t, s, job, func(j *dispatch.Job) { j.Status, j.NextAttemptAt = dispatch.StatusQueued, nil })
	_, items = claim(t, s, sub, "w1", "")
	require.Equal(t, []string{job}, claimedIDs(items))
	code, got = report(t, s, job, "fail", "w1", "errorMessage", "boom again")
	require.Equal(t, http.StatusOK, code, got)
	require.Equal(t, false, got["retryScheduled"])
	require.NotContains(t, got, "nextAttemptAt")
	require.Equal(t, "ERROR", got["job"].(map[string]any)["status"])
	require.InDelta(t, 2, got["job"].(map[string]any)["attemptCount"], 0)
}

func TestPullRacingWorkersNeverShareAJob(t *testing.T) {
	t.Parallel()
	s, sub := newPullServer(t, "IMMEDIATE", 3)
	const events, workers = 30, 6
	want := make([]string, 0, events)
	for i := range events {
		want = append(want, ingestOrder(t, s, fmt.Sprintf("e%d", i)))
	}
	var mu sync.Mutex
	got := map[string]string{}
	var dups []string
	var wg sync.WaitGroup
	for w := range workers {
		worker := fmt.Sprintf("w%d", w)
		wg.Go(func() {
			for {
				code, items := claim(t, s, sub, worker, "&max=3")
				if code == http.StatusNoContent {
					return
				}
				mu.Lock()
				for _, id := range claimedIDs(items) {
					if prev, dup := got[id]; dup {
						dups = append(dups, id+" by "+prev+" and "+worker)
					}
					got[id] = worker
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Empty(t, dups, "no job is claimed twice")
	require.Len(t, got, events)
	for _, id := range want {
		j, err := s.Store.JobGetByID(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, dispatch.StatusInProgress, j.Status)
		require.Equal(t, got[id], j.Worker, "the stored holder is the one answered")
		require.Len(t, j.Attempts, 1)
	}
}

func TestPullNextOnErrorOrdering(t *testing.T) {
	t.Parallel()
	s, sub := newPullServer(t, "NEXT_ON_ERROR", 3)
	a := ingestOrder(t, s, "e1", "messagegroup", "g")
	b := ingestOrder(t, s, "e2", "messagegroup", "g")
	c := ingestOrder(t, s, "e3", "messagegroup", "g")
	other := ingestOrder(t, s, "e4", "messagegroup", "h")

	_, items := claim(t, s, sub, "w1", "&max=10")
	require.Equal(t, []string{a, other}, claimedIDs(items), "one per group, the earliest")
	code, _ := claim(t, s, sub, "w2", "&max=10")
	require.Equal(t, http.StatusNoContent, code, "never two of a group in flight")

	code, _ = report(t, s, a, "fail", "w1", "errorMessage", "x")
	require.Equal(t, http.StatusOK, code)
	_, items = claim(t, s, sub, "w2", "&max=10")
	require.Equal(t, []string{b}, claimedIDs(items), "the failed job left the line")
	code, _ = report(t, s, b, "complete", "w2")
	require.Equal(t, http.StatusOK, code)
	_, items = claim(t, s, sub, "w2", "&max=10")
	require.Equal(t, []string{c}, claimedIDs(items))
}

func TestPullBlockOnErrorOrdering(t *testing.T) {
	t.Parallel()
	s, sub := newPullServer(t, "BLOCK_ON_ERROR", 1)
	a := ingestOrder(t, s, "e1", "messagegroup", "g")
	b := ingestOrder(t, s, "e2", "messagegroup", "g")

	_, items := claim(t, s, sub, "w1", "&max=10")
	require.Equal(t, []string{a}, claimedIDs(items))
	code, got := report(t, s, a, "fail", "w1", "errorMessage", "x")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, false, got["retryScheduled"])
	code, _ = claim(t, s, sub, "w1", "&max=10")
	require.Equal(t, http.StatusNoContent, code, "the ERROR job holds the group")

	resp, _ := s.do(t, http.MethodPost, "/api/dispatch-jobs/"+a+"/retry", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, items = claim(t, s, sub, "w1", "&max=10")
	require.Equal(t, []string{a}, claimedIDs(items), "the operator retry goes first")
	code, _ = report(t, s, a, "complete", "w1")
	require.Equal(t, http.StatusOK, code)
	_, items = claim(t, s, sub, "w1", "&max=10")
	require.Equal(t, []string{b}, claimedIDs(items))
}

func TestPullTags(t *testing.T) {
	t.Parallel()
	s, sub := newPullServer(t, "IMMEDIATE", 3)
	ingestOrder(t, s, "e1", "region", "us")
	eu := ingestOrder(t, s, "e2", "region", "eu")
	_, items := claim(t, s, sub, "w1", "&max=10&tags=apac,eu")
	require.Equal(t, []string{eu}, claimedIDs(items))
	code, _ := claim(t, s, sub, "w1", "&tags=eu")
	require.Equal(t, http.StatusNoContent, code)
	_, items = claim(t, s, sub, "w1", "&max=10&tags=order.created")
	require.Len(t, items, 1, "the event type is a tag too")
}

func TestPullLongPollGetsNewEvent(t *testing.T) {
	t.Parallel()
	s, sub := newPullServer(t, "IMMEDIATE", 3)
	type result struct {
		resp *http.Response
		got  map[string]any
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, got, err := s.send(t.Context(), http.MethodGet, claimPath(sub, "w1", "&wait=20s"), nil)
		done <- result{resp, got, err}
	}()
	// The claim must be waiting (not answered 204 at once) before the event
	// arrives; the worker registry records it on arrival.
	require.Eventually(t, func() bool {
		_, got := s.do(t, http.MethodGet, "/api/workers", nil)
		return len(got["items"].([]any)) == 1
	}, 60*time.Second, 10*time.Millisecond)
	job := ingestOrder(t, s, "e1")
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, http.StatusOK, r.resp.StatusCode)
	items := claimItems(r.got)
	require.Equal(t, []string{job}, claimedIDs(items))
	require.True(t, slices.ContainsFunc(items, func(m map[string]any) bool { return m["event"] != nil }))
}

// A paused pull subscription hands out nothing: its jobs wait until it is
// resumed, as a push subscription's do.
func TestPullClaimOfAPausedSubscriptionHandsOutNothing(t *testing.T) {
	t.Parallel()
	s, sub := newPullServer(t, "IMMEDIATE", 3)
	id := ingestOrder(t, s, "p-1")
	resp, got := s.do(t, http.MethodPost, "/api/subscriptions/"+sub+"/pause", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, got)

	status, _ := claim(t, s, sub, "w:1", "&wait=5s")
	require.Equal(t, http.StatusNoContent, status, "nothing is handed out while paused")

	resp, got = s.do(t, http.MethodPost, "/api/subscriptions/"+sub+"/resume", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, got)
	status, items := claim(t, s, sub, "w:1", "&wait=5s")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []string{id}, claimedIDs(items), "the job waited and goes out on resume")
}
