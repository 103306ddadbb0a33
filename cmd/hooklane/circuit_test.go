package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestEndpointHealthEndToEnd runs the gateway as `hooklane serve` does and
// checks API.md §12 through HTTP: a failing subscription's circuit opens
// after HOOKLANE_CIRCUIT_FAILURES, shows on its JSON, its health and the
// metrics; an operator's ordinary subscription to hooklane.* receives the
// operational events (circuit opened, job discarded) as signed webhooks,
// while the failing subscription, also bound to hooklane.*, never gets the
// news of itself; the probe after the cooldown closes the circuit and
// resume clears it all.
func TestEndpointHealthEndToEnd(t *testing.T) {
	t.Parallel()
	failing := newReceiver(t)
	failing.failFunc = func(d delivery) int {
		if strings.Contains(string(d.body), `"fail":true`) || strings.Contains(d.header.Get("ce-type"), "hooklane.") {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	}
	ops := newReceiver(t)
	gw := startGateway(t, map[string]string{"HOOKLANE_CIRCUIT_FAILURES": "3", "HOOKLANE_CIRCUIT_COOLDOWN": "2s"})
	post := func(path, body string) map[string]any {
		status, _, out := gw.do(t, http.MethodPost, path, "application/json", body, nil)
		require.Equal(t, http.StatusCreated, status, "%s: %v", path, out)
		return out
	}
	post("/api/event-types", `{"code":"shop.order.created","name":"Order created"}`)
	// The failing subscription also listens to hooklane.*: it must never
	// receive an operational event about itself.
	sub := post("/api/subscriptions", `{"code":"orders","eventTypes":[{"eventTypeCode":"shop.order.*"},{"eventTypeCode":"hooklane.*"}],
		"target":"`+failing.srv.URL+`","retry":{"maxAttempts":3,"initialBackoffSeconds":1,"maxBackoffSeconds":1}}`)
	subID := sub["id"].(string)
	post("/api/subscriptions", `{"code":"ops","eventTypes":[{"eventTypeCode":"hooklane.*"}],"target":"`+ops.srv.URL+`"}`)

	for i := range 3 {
		status, _, _ := gw.do(t, http.MethodPost, "/api/events", "application/cloudevents+json",
			fmt.Sprintf(`{"specversion":"1.0","id":"f-%d","source":"/shop","type":"shop.order.created","data":{"fail":true}}`, i), nil)
		require.Equal(t, http.StatusCreated, status)
	}
	var circuit map[string]any
	require.Eventually(t, func() bool {
		_, _, got := gw.do(t, http.MethodGet, "/api/subscriptions/"+subID, "", "", nil)
		circuit, _ = got["circuit"].(map[string]any)
		return circuit["state"] == "OPEN" || circuit["state"] == "HALF_OPEN"
	}, 30*time.Second, 20*time.Millisecond, "the circuit never opened")
	require.NotNil(t, circuit["openedAt"])
	require.NotNil(t, circuit["nextProbeAt"])

	// The operator's subscription gets the news, signed and typed.
	var opened map[string]any
	require.Eventually(t, func() bool {
		ops.mu.Lock()
		defer ops.mu.Unlock()
		for _, d := range ops.got {
			var ce map[string]any
			if json.Unmarshal(d.body, &ce) == nil && ce["type"] == "hooklane.subscription.circuit.opened" {
				opened = ce
				require.NotEmpty(t, d.header.Get("webhook-signature"))
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "the ops subscription got no circuit.opened event")
	require.Equal(t, "/hooklane", opened["source"])
	require.Equal(t, subID, opened["subject"])
	require.Equal(t, subID, opened["subscriptionid"])
	data := opened["data"].(map[string]any)
	require.Equal(t, "orders", data["subscription"])
	require.InDelta(t, 3, data["consecutiveFailures"], 0)
	require.Contains(t, data["reason"], "3 consecutive failed attempts")

	// Health shows the failures; the metrics count the open circuit.
	require.Eventually(t, func() bool {
		_, _, h := gw.do(t, http.MethodGet, "/api/subscriptions/"+subID+"/health", "", "", nil)
		hour := h["windows"].([]any)[0].(map[string]any)
		return hour["failed"].(float64) >= 3 && h["lastFailureAt"] != nil
	}, 30*time.Second, 50*time.Millisecond, "the health view never showed the failures")
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, gw.base+"/metrics", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	metrics, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Contains(t, string(metrics), `hooklane_circuit_transitions_total{to="open"} 1`)
	require.Regexp(t, `hooklane_circuits\{state="(OPEN|HALF_OPEN)"\} 1`, string(metrics))

	// The receiver recovers: the probe after the 2 s cooldown closes the
	// circuit, the jobs it held are delivered, and the operator hears of it.
	failing.mu.Lock()
	failing.failFunc = nil
	failing.mu.Unlock()
	require.Eventually(t, func() bool {
		_, _, got := gw.do(t, http.MethodGet, "/api/subscriptions/"+subID, "", "", nil)
		return got["circuit"].(map[string]any)["state"] == "CLOSED"
	}, 60*time.Second, 50*time.Millisecond, "the circuit never closed")
	require.Eventually(t, func() bool {
		ops.mu.Lock()
		defer ops.mu.Unlock()
		for _, d := range ops.got {
			if strings.Contains(string(d.body), `"type":"hooklane.subscription.circuit.closed"`) {
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "the ops subscription got no circuit.closed event")
	// The close queues the held jobs; their deliveries follow it.
	require.Eventually(t, func() bool {
		_, _, jobs := gw.do(t, http.MethodGet, "/api/dispatch-jobs?subscription=orders&status=COMPLETED", "", "", nil)
		return len(jobs["items"].([]any)) == 3
	}, 30*time.Second, 50*time.Millisecond, "the held jobs went out once the circuit closed")

	// Never the news of itself.
	failing.mu.Lock()
	defer failing.mu.Unlock()
	for _, d := range failing.got {
		require.NotContains(t, string(d.body), `"subscriptionid":"`+subID+`"`, "a subscription received an operational event about itself")
	}
}
