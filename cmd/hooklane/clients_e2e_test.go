package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestClientSuspensionHoldsJobs: API.md §11 — a suspended client's jobs
// wait PENDING (the router parks them) and go out when it is ACTIVE again;
// nothing is dropped.
func TestClientSuspensionHoldsJobs(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(recv.Close)
	gw := startGateway(t, nil)
	do := func(method, path, ctype, body string, want int) map[string]any {
		t.Helper()
		status, _, out := gw.do(t, method, path, ctype, body, nil)
		require.Equal(t, want, status, "%s %s: %v", method, path, out)
		return out
	}
	do("POST", "/api/event-types", "application/json", `{"code":"susp.order.created","name":"Order created"}`, http.StatusCreated)
	do("POST", "/api/clients", "application/json", `{"id":"acme","name":"ACME"}`, http.StatusCreated)
	do("POST", "/api/subscriptions", "application/json", `{"code":"acme-hook","clientId":"acme","delaySeconds":1,
		"eventTypes":[{"eventTypeCode":"susp.order.created"}],"target":"`+recv.URL+`/hook"}`, http.StatusCreated)
	ev := do("POST", "/api/events", "application/cloudevents+json",
		`{"specversion":"1.0","id":"s-1","source":"/susp","type":"susp.order.created","clientid":"acme","data":{}}`, http.StatusCreated)
	jobs, _ := ev["dispatchJobs"].([]any)
	require.Len(t, jobs, 1)
	jobID := jobs[0].(map[string]any)["id"].(string)
	do("PATCH", "/api/clients/acme", "application/json", `{"status":"SUSPENDED"}`, http.StatusOK)

	// The job comes due after its delay; the router parks it instead of
	// delivering it.
	require.Eventually(t, func() bool {
		_, _, job := gw.do(t, "GET", "/api/dispatch-jobs/"+jobID+"?include=history", "", "", nil)
		return job["status"] == "PENDING" && strings.Contains(fmt.Sprint(job["history"]), "paused")
	}, 60*time.Second, 50*time.Millisecond, "the job was not parked")
	require.Zero(t, hits.Load(), "a suspended client's job was delivered")
	do("POST", "/api/events", "application/cloudevents+json",
		`{"specversion":"1.0","id":"s-2","source":"/susp","type":"susp.order.created","clientid":"acme","data":{}}`, http.StatusUnprocessableEntity)

	do("PATCH", "/api/clients/acme", "application/json", `{"status":"ACTIVE"}`, http.StatusOK)
	require.Eventually(t, func() bool {
		_, _, job := gw.do(t, "GET", "/api/dispatch-jobs/"+jobID, "", "", nil)
		return job["status"] == "COMPLETED"
	}, 60*time.Second, 50*time.Millisecond, "the job did not go out on reactivation")
	require.Equal(t, int64(1), hits.Load())
}
