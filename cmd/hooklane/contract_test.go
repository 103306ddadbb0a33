package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
)

// Contract tests: black-box checks, through HTTP only, of API.md rules that
// no other test pins down. Each names the rule it checks.

// requireProblem checks the problem+json shape of an error answer (API.md
// conventions) and, when pointer is not "-", that errors[] points there.
func requireProblem(t *testing.T, status int, hdr http.Header, body map[string]any, want int, pointer string) {
	t.Helper()
	require.Equal(t, want, status, "%v", body)
	require.Equal(t, "application/problem+json", hdr.Get("Content-Type"))
	require.EqualValues(t, want, body["status"])
	require.NotEmpty(t, body["type"])
	require.NotEmpty(t, body["title"])
	require.NotEmpty(t, body["detail"])
	if pointer == "-" {
		return
	}
	errs, _ := body["errors"].([]any)
	require.NotEmpty(t, errs, "%v", body)
	var pointers []string
	for _, e := range errs {
		pointers = append(pointers, e.(map[string]any)["pointer"].(string))
	}
	require.Contains(t, pointers, pointer, "%v", body)
}

// TestContractKnownExtensionsAreStrings: API.md §1 — the extensions the
// gateway understands are strings; any other type is an invalid envelope
// (step 2 → 400 pointing at the attribute, also inside a batch), while an
// extension it does not interpret keeps whatever value it has.
func TestContractKnownExtensionsAreStrings(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, nil)
	status, _, _ := gw.do(t, "POST", "/api/event-types", "application/json", `{"code":"shop.order.created","name":"Order created"}`, nil)
	require.Equal(t, http.StatusCreated, status)
	const envelope = `"specversion":"1.0","source":"/shop","type":"shop.order.created"`
	for i, name := range []string{"dataversion", "messagegroup", "deduplicationid", "correlationid", "causationid", "traceparent", "tracestate"} {
		for _, value := range []string{"5", "true", `{"a":"b"}`} {
			t.Run(name+"="+value, func(t *testing.T) {
				t.Parallel()
				body := fmt.Sprintf(`{%s,"id":"x-%d","%s":%s}`, envelope, i, name, value)
				status, hdr, got := gw.do(t, "POST", "/api/events", "application/cloudevents+json", body, nil)
				requireProblem(t, status, hdr, got, http.StatusBadRequest, "/"+name)

				batch := fmt.Sprintf(`[{%s,"id":"y-%d"},%s]`, envelope, i, body)
				status, hdr, got = gw.do(t, "POST", "/api/events", "application/cloudevents-batch+json", batch, nil)
				requireProblem(t, status, hdr, got, http.StatusBadRequest, "/1/"+name)
			})
		}
	}
	// Nothing of the rejected requests was stored.
	_, _, list := gw.do(t, "GET", "/api/events", "", "", nil)
	require.Empty(t, list["items"])

	status, _, got := gw.do(t, "POST", "/api/events", "application/cloudevents+json",
		`{`+envelope+`,"id":"kept","region":5,"messagegroup":"order:1"}`, nil)
	require.Equal(t, http.StatusCreated, status, "%v", got)
	require.EqualValues(t, 5, got["event"].(map[string]any)["region"])
}

// listPage reads one page of a list endpoint.
func listPage(t *testing.T, gw *gateway, path string) (items []map[string]any, next any) {
	t.Helper()
	status, _, got := gw.do(t, "GET", path, "", "", nil)
	require.Equal(t, http.StatusOK, status, "%v", got)
	require.Contains(t, got, "nextCursor", "every list answer has nextCursor")
	for _, it := range got["items"].([]any) {
		items = append(items, it.(map[string]any))
	}
	return items, got["nextCursor"]
}

// TestContractListsNewestFirstWithCursor: API.md conventions — list
// endpoints take ?limit= and an opaque ?cursor=, answer {items, nextCursor}
// (null on the last page) with items newest first; a limit out of range or a
// cursor the server never gave is a 422.
func TestContractListsNewestFirstWithCursor(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, nil)
	for _, code := range []string{"b.first", "a.second", "c.third"} {
		status, _, got := gw.do(t, "POST", "/api/event-types", "application/json", `{"code":"`+code+`","name":"x"}`, nil)
		require.Equal(t, http.StatusCreated, status, "%v", got)
		status, _, got = gw.do(t, "POST", "/api/dispatch-pools", "application/json", `{"code":"`+strings.ReplaceAll(code, ".", "-")+`"}`, nil)
		require.Equal(t, http.StatusCreated, status, "%v", got)
	}
	tests := []struct {
		name, path, field string
		want              []string
	}{
		{"event types", "/api/event-types", "code", []string{"c.third", "a.second", "b.first"}},
		{"dispatch pools", "/api/dispatch-pools", "code", []string{"c-third", "a-second", "b-first", "default"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var codes []string
			path := tt.path + "?limit=2"
			for range 8 {
				items, next := listPage(t, gw, path)
				require.LessOrEqual(t, len(items), 2)
				for _, it := range items {
					// The built-in types of the operational events (API.md
					// §12) are registered at start, before these.
					if code := it[tt.field].(string); !strings.HasPrefix(code, "hooklane.") {
						codes = append(codes, code)
					}
				}
				if next == nil {
					break
				}
				path = tt.path + "?limit=2&cursor=" + next.(string)
			}
			require.Equal(t, tt.want, codes, "newest first, every item once across pages")

			for _, q := range []string{"?limit=0", "?limit=-1", "?limit=x", "?cursor=%40%40not-a-cursor"} {
				status, hdr, got := gw.do(t, "GET", tt.path+q, "", "", nil)
				requireProblem(t, status, hdr, got, http.StatusUnprocessableEntity, "-")
			}
			for _, q := range []string{"?limit=501", "?limit=99999999999999999999999"} {
				items, _ := listPage(t, gw, tt.path+q)
				require.NotEmpty(t, items, "a limit above the maximum is clamped: %s", q)
			}
		})
	}
	t.Run("workers", func(t *testing.T) {
		t.Parallel()
		items, next := listPage(t, gw, "/api/workers?limit=5")
		require.Empty(t, items)
		require.Nil(t, next)
	})
}

// TestContractFilterValuesAreChecked: API.md conventions — well-formed input
// that breaks a rule is a 422 (here a status filter naming no status).
func TestContractFilterValuesAreChecked(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, nil)
	for _, path := range []string{"/api/subscriptions?status=BOGUS", "/api/dispatch-jobs?status=BOGUS", "/api/event-types?status=BOGUS"} {
		status, hdr, got := gw.do(t, "GET", path, "", "", nil)
		requireProblem(t, status, hdr, got, http.StatusUnprocessableEntity, "-")
	}
	for _, path := range []string{"/api/subscriptions?status=ACTIVE", "/api/subscriptions?status=PAUSED"} {
		items, _ := listPage(t, gw, path)
		require.Empty(t, items)
	}
}

// TestContractBodyMustBeAnObject: API.md conventions — malformed JSON is a
// 400, a well-formed body of the wrong kind (null, an array, a string where
// an object is due) a 422, never a 200 that did nothing nor a 500.
func TestContractBodyMustBeAnObject(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, nil)
	secretless := gw.setup(t, "http://127.0.0.1:9/never", "")
	require.NotEmpty(t, secretless)
	status, _, ver := gw.do(t, "POST", "/api/event-types/shop.order.created/versions", "application/json", `{"version":"1.0","schema":{"type":"object"}}`, nil)
	require.Equal(t, http.StatusCreated, status, "%v", ver)
	_, _, subs := gw.do(t, "GET", "/api/subscriptions", "", "", nil)
	sub := subs["items"].([]any)[0].(map[string]any)["id"].(string)
	_, _, pools := gw.do(t, "GET", "/api/dispatch-pools", "", "", nil)
	pool := pools["items"].([]any)[0].(map[string]any)["id"].(string)

	routes := []struct{ method, path string }{
		{"POST", "/api/event-types"},
		{"PATCH", "/api/event-types/shop.order.created"},
		{"POST", "/api/event-types/shop.order.created/versions"},
		{"PATCH", "/api/event-types/shop.order.created/versions/1.0"},
		{"POST", "/api/subscriptions"},
		{"PATCH", "/api/subscriptions/" + sub},
		{"POST", "/api/dispatch-pools"},
		{"PATCH", "/api/dispatch-pools/" + pool},
		{"POST", "/api/dispatch-jobs"},
		{"POST", "/api/dispatch-jobs/retry"},
	}
	for _, r := range routes {
		t.Run(r.method+" "+r.path, func(t *testing.T) {
			t.Parallel()
			for _, body := range []string{"null", "[]", `"x"`, "1"} {
				status, hdr, got := gw.do(t, r.method, r.path, "application/json", body, nil)
				requireProblem(t, status, hdr, got, http.StatusUnprocessableEntity, "-")
			}
			for _, body := range []string{`{"code":`, "", "nul"} {
				status, hdr, got := gw.do(t, r.method, r.path, "application/json", body, nil)
				requireProblem(t, status, hdr, got, http.StatusBadRequest, "-")
			}
		})
	}
}

// TestContractTaskJobDelivery: API.md §5 — a TASK job answers 201 with the
// job (kind TASK, its generated secret) and a Location; its webhook body is
// payload as JSON (application/json) signed with that secret, webhook-id the
// job id; its validation problems point into the request body.
func TestContractTaskJobDelivery(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	gw := startGateway(t, nil)
	status, hdr, job := gw.do(t, "POST", "/api/dispatch-jobs", "application/json",
		`{"code":"billing.invoice.send","targetUrl":"`+recv.srv.URL+`/tasks","payload":{"invoice":42,"lines":["a"]},"subject":"inv-42","headers":{"X-Team":"billing"}}`, nil)
	require.Equal(t, http.StatusCreated, status, "%v", job)
	id := job["id"].(string)
	require.Equal(t, "/api/dispatch-jobs/"+id, hdr.Get("Location"))
	require.Equal(t, "TASK", job["kind"])
	secret := job["secret"].(string)
	require.True(t, strings.HasPrefix(secret, "whsec_"))

	d := recv.waitFor(t, 1)[0]
	require.Equal(t, "application/json", strings.Split(d.header.Get("Content-Type"), ";")[0])
	require.Equal(t, id, d.header.Get("webhook-id"))
	require.Equal(t, "1", d.header.Get("hooklane-attempt"))
	require.Equal(t, "billing", d.header.Get("X-Team"))
	require.True(t, strings.HasPrefix(d.header.Get("User-Agent"), "hooklane/"))
	var payload any
	require.NoError(t, json.Unmarshal(d.body, &payload))
	require.Equal(t, map[string]any{"invoice": float64(42), "lines": []any{"a"}}, payload)
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	require.NoError(t, wh.Verify(d.body, d.header))
	done := gw.waitJob(t, id, "COMPLETED")
	require.NotContains(t, done, "secret", "the secret is shown only at creation")

	status, hdr, got := gw.do(t, "POST", "/api/dispatch-jobs", "application/json",
		`{"code":"billing.invoice.send","targetUrl":"ftp://x/y","payload":{},"timeoutSeconds":301}`, nil)
	requireProblem(t, status, hdr, got, http.StatusUnprocessableEntity, "/targetUrl")
	require.Equal(t, "the job is invalid", got["detail"])
	requireProblem(t, status, hdr, got, http.StatusUnprocessableEntity, "/timeoutSeconds")
}

// TestContractDataOnlyDelivery: API.md §6 — with dataOnly the receiver gets
// the data alone with its datacontenttype and the attributes as ce-*
// headers (CloudEvents binary mode), still signed.
func TestContractDataOnlyDelivery(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	gw := startGateway(t, nil)
	secret := gw.setup(t, recv.srv.URL, `,"dataOnly":true`)
	status, _, ev := gw.do(t, "POST", "/api/events", "application/cloudevents+json",
		`{"specversion":"1.0","id":"d-1","source":"/shop","type":"shop.order.created","subject":"order:7","region":"eu","data":{"amount":7}}`, nil)
	require.Equal(t, http.StatusCreated, status, "%v", ev)

	d := recv.waitFor(t, 1)[0]
	require.Equal(t, "application/json", strings.Split(d.header.Get("Content-Type"), ";")[0])
	var data any
	require.NoError(t, json.Unmarshal(d.body, &data))
	require.Equal(t, map[string]any{"amount": float64(7)}, data)
	for h, want := range map[string]string{"ce-specversion": "1.0", "ce-id": "d-1", "ce-source": "/shop", "ce-type": "shop.order.created", "ce-subject": "order:7", "ce-region": "eu"} {
		require.Equal(t, want, d.header.Get(h), h)
	}
	require.NotEmpty(t, d.header.Get("ce-time"))
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	require.NoError(t, wh.Verify(d.body, d.header))
}

// TestContractIngestLimitsAndStepOrder: API.md §1 — 413 when the request
// exceeds HOOKLANE_MAX_REQUEST_BYTES or one event (also a batch item or a
// binary body) HOOKLANE_MAX_EVENT_BYTES; 415 for a content type of no mode;
// a ce-specversion header makes application/json binary mode; the first
// failing validation step decides (an envelope error beats an unknown type
// elsewhere in the batch); a rejected request stores nothing.
func TestContractIngestLimitsAndStepOrder(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, map[string]string{"HOOKLANE_MAX_EVENT_BYTES": "1024", "HOOKLANE_MAX_REQUEST_BYTES": "4096", "HOOKLANE_MAX_BATCH": "50"})
	status, _, _ := gw.do(t, "POST", "/api/event-types", "application/json", `{"code":"shop.order.created","name":"x"}`, nil)
	require.Equal(t, http.StatusCreated, status)
	item := func(id string, pad int) string {
		return fmt.Sprintf(`{"specversion":"1.0","id":%q,"source":"/s","type":"shop.order.created","data":%q}`, id, strings.Repeat("x", pad))
	}
	items := make([]string, 8)
	for i := range items {
		items[i] = item(fmt.Sprint("big-", i), 700)
	}
	binary := map[string]string{"ce-specversion": "1.0", "ce-id": "bin-1", "ce-source": "/s", "ce-type": "shop.order.created"}
	tests := []struct {
		name, contentType, body string
		header                  map[string]string
		status                  int
		pointer                 string
	}{
		{"request over max request bytes", "application/cloudevents-batch+json", "[" + strings.Join(items, ",") + "]", nil, 413, "-"},
		{"batch item over max event bytes", "application/cloudevents-batch+json", "[" + item("ok", 10) + "," + item("big", 2000) + "]", nil, 413, "-"},
		{"binary body over max event bytes", "application/octet-stream", strings.Repeat("x", 2000), binary, 413, "-"},
		{"no mode", "text/plain", "hello", nil, 415, "-"},
		{"no content type", "", item("none", 1), nil, 415, "-"},
		{"json with ce-specversion is binary: body is data", "application/json", `{"amount":`, binary, 400, "/data"},
		{
			"envelope error beats unknown type", "application/cloudevents-batch+json",
			`[{"specversion":"1.0","id":"u","source":"/s","type":"shop.nothing"},{"specversion":"1.0","source":"/s","type":"shop.order.created"}]`, nil, 400, "/1/id",
		},
		{
			"unknown type in a batch", "application/cloudevents-batch+json",
			`[` + item("fine", 1) + `,{"specversion":"1.0","id":"u","source":"/s","type":"shop.nothing"}]`, nil, 422, "/1/type",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, hdr, got := gw.do(t, "POST", "/api/events", tt.contentType, tt.body, tt.header)
			requireProblem(t, status, hdr, got, tt.status, tt.pointer)
		})
	}
	t.Run("within limits", func(t *testing.T) {
		t.Parallel()
		status, _, got := gw.do(t, "POST", "/api/events", "application/cloudevents-batch+json", "["+strings.Join(items[:5], ",")+"]", nil)
		require.Equal(t, http.StatusCreated, status, "%v", got)
		require.Len(t, got["items"], 5)
		status, _, got = gw.do(t, "POST", "/api/events", "application/json", `{"amount":1}`, binary)
		require.Equal(t, http.StatusCreated, status, "%v", got)
		require.Equal(t, map[string]any{"amount": float64(1)}, got["event"].(map[string]any)["data"])
	})
}

// TestContractDeliveryOutcomes: API.md §6 — 408, 425, 429 and 5xx are
// retried; a redirect is not followed and, like any other 4xx, ends the job
// in ERROR at once.
func TestContractDeliveryOutcomes(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls[r.URL.Path]++
		n := calls[r.URL.Path]
		mu.Unlock()
		first := map[string]int{"/r408": 408, "/r425": 425, "/r429": 429, "/r502": 502, "/r404": 404, "/r422": 422}
		switch {
		case r.URL.Path == "/redirect":
			http.Redirect(w, r, "/landed", http.StatusFound)
		case n == 1 && first[r.URL.Path] != 0:
			w.WriteHeader(first[r.URL.Path])
		case r.URL.Path == "/r404" || r.URL.Path == "/r422":
			w.WriteHeader(first[r.URL.Path])
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	t.Cleanup(srv.Close)
	gw := startGateway(t, nil)
	status, _, _ := gw.do(t, "POST", "/api/event-types", "application/json", `{"code":"shop.order.created","name":"x"}`, nil)
	require.Equal(t, http.StatusCreated, status)
	want := map[string]struct {
		status   string
		attempts int
	}{
		"r408": {"COMPLETED", 2}, "r425": {"COMPLETED", 2}, "r429": {"COMPLETED", 2}, "r502": {"COMPLETED", 2},
		"redirect": {"ERROR", 1}, "r404": {"ERROR", 1}, "r422": {"ERROR", 1},
	}
	for code := range want {
		status, _, got := gw.do(t, "POST", "/api/subscriptions", "application/json",
			`{"code":"`+code+`","eventTypes":[{"eventTypeCode":"shop.order.created"}],"target":"`+srv.URL+`/`+code+`","retry":{"maxAttempts":3,"initialBackoffSeconds":1,"maxBackoffSeconds":1}}`, nil)
		require.Equal(t, http.StatusCreated, status, "%v", got)
	}
	status, _, ev := gw.do(t, "POST", "/api/events", "application/cloudevents+json",
		`{"specversion":"1.0","id":"o-1","source":"/shop","type":"shop.order.created","data":{}}`, nil)
	require.Equal(t, http.StatusCreated, status, "%v", ev)
	jobs := ev["dispatchJobs"].([]any)
	require.Len(t, jobs, len(want))
	for _, j := range jobs {
		j := j.(map[string]any)
		w := want[j["subscription"].(string)]
		job := gw.waitJob(t, j["id"].(string), w.status)
		require.EqualValues(t, w.attempts, job["attemptCount"], "%s", j["subscription"])
	}
	mu.Lock()
	defer mu.Unlock()
	require.Zero(t, calls["/landed"], "a redirect is not followed")
	require.Equal(t, 1, calls["/redirect"])
}

// TestContractSubscriptionLifecycle: API.md §3 — pause/resume answer 200
// with the subscription; a PAUSED subscription matches no new event and its
// pending job waits, then goes out after resume; rotate-secret answers the
// new secret and previousExpiresAt, both secrets sign meanwhile (several
// space-separated signatures) and GET …/secret lists them; no other answer
// shows a secret; DELETE answers 204 and cancels the jobs not yet delivered.
func TestContractSubscriptionLifecycle(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	gw := startGateway(t, nil)
	oldSecret := gw.setup(t, recv.srv.URL, `,"delaySeconds":2`)
	_, _, subs := gw.do(t, "GET", "/api/subscriptions", "", "", nil)
	sub := subs["items"].([]any)[0].(map[string]any)
	require.NotContains(t, sub, "secret", "a list shows no secret")
	id := sub["id"].(string)
	event := func(eid string) map[string]any {
		t.Helper()
		status, _, ev := gw.do(t, "POST", "/api/events", "application/cloudevents+json",
			`{"specversion":"1.0","id":"`+eid+`","source":"/shop","type":"shop.order.created","data":{}}`, nil)
		require.Equal(t, http.StatusCreated, status, "%v", ev)
		return ev
	}

	waiting := event("before-pause")["dispatchJobs"].([]any)[0].(map[string]any)["id"].(string)
	status, _, paused := gw.do(t, "POST", "/api/subscriptions/"+id+"/pause", "", "", nil)
	require.Equal(t, http.StatusOK, status, "%v", paused)
	require.Equal(t, "PAUSED", paused["status"])
	require.NotContains(t, paused, "secret")
	require.Empty(t, event("while-paused")["dispatchJobs"], "a PAUSED subscription matches no new event")
	require.Never(t, func() bool {
		_, _, job := gw.do(t, "GET", "/api/dispatch-jobs/"+waiting, "", "", nil)
		return job["status"] == "COMPLETED" || job["status"] == "CANCELLED" || job["status"] == "ERROR"
	}, 3500*time.Millisecond, 100*time.Millisecond, "the pending job of a paused subscription waits")
	recv.mu.Lock()
	require.Empty(t, recv.got, "nothing is delivered while paused")
	recv.mu.Unlock()

	status, _, resumed := gw.do(t, "POST", "/api/subscriptions/"+id+"/resume", "", "", nil)
	require.Equal(t, http.StatusOK, status, "%v", resumed)
	require.Equal(t, "ACTIVE", resumed["status"])
	gw.waitJob(t, waiting, "COMPLETED")

	status, _, rotated := gw.do(t, "POST", "/api/subscriptions/"+id+"/rotate-secret", "", "", nil)
	require.Equal(t, http.StatusOK, status, "%v", rotated)
	newSecret := rotated["secret"].(string)
	require.True(t, strings.HasPrefix(newSecret, "whsec_"))
	require.NotEqual(t, oldSecret, newSecret)
	require.NotEmpty(t, rotated["previousExpiresAt"])
	status, _, secrets := gw.do(t, "GET", "/api/subscriptions/"+id+"/secret", "", "", nil)
	require.Equal(t, http.StatusOK, status, "%v", secrets)
	list := secrets["secrets"].([]any)
	require.Len(t, list, 2)
	expires := map[string]any{}
	for _, s := range list {
		s := s.(map[string]any)
		expires[s["secret"].(string)] = s["expiresAt"]
	}
	require.Nil(t, expires[newSecret])
	require.Equal(t, rotated["previousExpiresAt"], expires[oldSecret])

	event("after-rotation")
	var d delivery
	for n := 2; d.body == nil; n++ { // at-least-once: skip a repeat of the first
		if got := recv.waitFor(t, n)[n-1]; strings.Contains(string(got.body), `"after-rotation"`) {
			d = got
		}
	}
	require.Len(t, strings.Fields(d.header.Get("webhook-signature")), 2, "both secrets sign during a rotation")
	for _, secret := range []string{oldSecret, newSecret} {
		wh, err := standardwebhooks.NewWebhook(secret)
		require.NoError(t, err)
		require.NoError(t, wh.Verify(d.body, d.header))
	}
	status, _, got := gw.do(t, "GET", "/api/subscriptions/"+id, "", "", nil)
	require.Equal(t, http.StatusOK, status)
	require.NotContains(t, got, "secret")

	status, _, patched := gw.do(t, "PATCH", "/api/subscriptions/"+id, "application/json", `{"delaySeconds":3600}`, nil)
	require.Equal(t, http.StatusOK, status, "%v", patched)
	require.NotContains(t, patched, "secret")
	pending := event("before-delete")["dispatchJobs"].([]any)[0].(map[string]any)["id"].(string)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodDelete, gw.base+"/api/subscriptions/"+id, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Empty(t, body)
	status, hdr, got := gw.do(t, "GET", "/api/subscriptions/"+id, "", "", nil)
	requireProblem(t, status, hdr, got, http.StatusNotFound, "-")
	gw.waitJob(t, pending, "CANCELLED")
}

// TestContractSubscriptionValidation: API.md §3 and the conventions — a
// subscription that breaks a rule is a 422 whose errors[] point into the
// body, on create and on PATCH, and nothing is stored.
func TestContractSubscriptionValidation(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, nil)
	gw.setup(t, "http://127.0.0.1:9/never", "")
	_, _, subs := gw.do(t, "GET", "/api/subscriptions", "", "", nil)
	id := subs["items"].([]any)[0].(map[string]any)["id"].(string)
	const base = `"eventTypes":[{"eventTypeCode":"shop.order.created"}],"target":"http://127.0.0.1:9/x"`
	tests := []struct{ name, fields, pointer string }{
		{"code missing", base, "/code"},
		{"no event types", `"code":"c","eventTypes":[],"target":"http://127.0.0.1:9/x"`, "/eventTypes"},
		{"bad type pattern", `"code":"c","eventTypes":[{"eventTypeCode":"shop.or*"}],"target":"http://127.0.0.1:9/x"`, "/eventTypes/0/eventTypeCode"},
		{"bad spec version", `"code":"c","eventTypes":[{"eventTypeCode":"shop.order.created","specVersion":"one"}],"target":"http://127.0.0.1:9/x"`, "/eventTypes/0/specVersion"},
		{"unknown op without value", `"code":"c",` + base + `,"filters":[{"field":"region","op":"like"}]`, "/filters/0/op"},
		{"unknown op", `"code":"c",` + base + `,"filters":[{"field":"region","op":"like","value":"x"}]`, "/filters/0/op"},
		{"in without array", `"code":"c",` + base + `,"filters":[{"field":"region","op":"eq","value":"x"},{"field":"region","op":"in","value":"x"}]`, "/filters/1/value"},
		{"exists without boolean", `"code":"c",` + base + `,"filters":[{"field":"region","op":"exists","value":"yes"}]`, "/filters/0/value"},
		{"bad field", `"code":"c",` + base + `,"filters":[{"field":"Region!","op":"eq","value":"x"}]`, "/filters/0/field"},
		{"target not http", `"code":"c","eventTypes":[{"eventTypeCode":"shop.order.created"}],"target":"ftp://x/y"`, "/target"},
		{"push without target", `"code":"c","eventTypes":[{"eventTypeCode":"shop.order.created"}]`, "/target"},
		{"timeout above 300", `"code":"c",` + base + `,"timeoutSeconds":301`, "/timeoutSeconds"},
		{"timeout zero", `"code":"c",` + base + `,"timeoutSeconds":0`, "/timeoutSeconds"},
		{"timeout wrong type", `"code":"c",` + base + `,"timeoutSeconds":"30"`, "/timeoutSeconds"},
		{"bad mode", `"code":"c",` + base + `,"mode":"SOMETIMES"`, "/mode"},
		{"bad delivery", `"code":"c",` + base + `,"delivery":"carrier"`, "/delivery"},
		{"negative delay", `"code":"c",` + base + `,"delaySeconds":-1`, "/delaySeconds"},
		{"no attempts", `"code":"c",` + base + `,"retry":{"maxAttempts":0}`, "/retry/maxAttempts"},
		{"unknown pool", `"code":"c",` + base + `,"dispatchPoolId":"01JD0000000000000000000000"`, "/dispatchPoolId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, hdr, got := gw.do(t, "POST", "/api/subscriptions", "application/json", "{"+tt.fields+"}", nil)
			requireProblem(t, status, hdr, got, http.StatusUnprocessableEntity, tt.pointer)
			if tt.pointer == "/code" || tt.pointer == "/target" && !strings.Contains(tt.fields, "ftp") {
				return // a PATCH keeps the stored code and target
			}
			status, hdr, got = gw.do(t, "PATCH", "/api/subscriptions/"+id, "application/json", "{"+tt.fields+"}", nil)
			requireProblem(t, status, hdr, got, http.StatusUnprocessableEntity, tt.pointer)
		})
	}
	t.Run("nothing stored", func(t *testing.T) {
		t.Parallel()
		status, _, got := gw.do(t, "GET", "/api/subscriptions/"+id, "", "", nil)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, "orders", got["code"])
	})
}

// TestContractAuthCoversEveryAPIPath: API.md conventions and §9 — keys from
// HOOKLANE_API_KEYS; every /api/* request needs one, also a request that
// matches no route or method (401 without, then 404/405); a known key of
// the wrong role is 403; probes need no key.
func TestContractAuthCoversEveryAPIPath(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, map[string]string{"HOOKLANE_API_KEYS": "ops:admin:k-admin-1,shop:producer:k-prod-1,dash:viewer:k-view-1,pull:worker:k-work-1"})
	bearer := func(k string) map[string]string { return map[string]string{"Authorization": "Bearer " + k} }
	tests := []struct {
		name, method, path string
		header             map[string]string
		status             int
	}{
		{"unknown route, no key", "GET", "/api/no-such-thing", nil, 401},
		{"unknown route, unknown key", "GET", "/api/no-such-thing", bearer("nope"), 401},
		{"unknown route, viewer", "GET", "/api/no-such-thing", bearer("k-view-1"), 404},
		{"wrong method, no key", "PUT", "/api/events", nil, 401},
		{"wrong method, producer", "PUT", "/api/events", bearer("k-prod-1"), 405},
		{"viewer may not ingest", "POST", "/api/events", bearer("k-view-1"), 403},
		{"worker may not read events", "GET", "/api/events", bearer("k-work-1"), 403},
		{"producer may not read subscriptions", "GET", "/api/subscriptions", bearer("k-prod-1"), 403},
		{"viewer may not claim", "GET", "/api/subscriptions/01JD0000000000000000000000/jobs/next?worker_id=h:1", bearer("k-view-1"), 403},
		{"producer reads jobs", "GET", "/api/dispatch-jobs", bearer("k-prod-1"), 200},
		{"worker reads jobs", "GET", "/api/dispatch-jobs", bearer("k-work-1"), 200},
		{"viewer reads the stream", "GET", "/api/stream?since=2000-01-01T00:00:00Z&jobs=none", bearer("k-view-1"), 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, tt.method, gw.base+tt.path, strings.NewReader("{}"))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, tt.status, resp.StatusCode)
			if tt.status >= 400 {
				require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
			}
			if tt.status == 401 {
				require.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
			}
		})
	}
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, err := get(t.Context(), gw.base+p)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode, p)
	}
}

// TestContractSubscriptionListFilters: API.md §3 — GET /api/subscriptions
// filters by status, clientId and eventType; ?eventType=<code> lists the
// subscriptions that receive that type (bound exactly or by a pattern that
// matches it; a pattern itself finds the bindings equal to it); newest
// first, paged by cursor.
func TestContractSubscriptionListFilters(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, nil)
	subs := []struct{ code, binding, extra string }{
		{"exact", "shop.order.created", ""},
		{"glob", "shop.order.*", ""},
		{"inner", "shop.*.created", `,"clientId":"c1"`},
		{"other", "shop.invoice.paid", ""},
		{"paused-exact", "shop.order.created", ""},
	}
	ids := map[string]string{}
	// API.md §11: a subscription's clientId names an existing client.
	status, _, got := gw.do(t, "POST", "/api/clients", "application/json", `{"id":"c1","name":"Client one"}`, nil)
	require.Equal(t, http.StatusCreated, status, "%v", got)
	for _, s := range subs {
		status, _, got := gw.do(t, "POST", "/api/subscriptions", "application/json",
			`{"code":"`+s.code+`","eventTypes":[{"eventTypeCode":"`+s.binding+`"}],"target":"http://127.0.0.1:9/x"`+s.extra+`}`, nil)
		require.Equal(t, http.StatusCreated, status, "%v", got)
		ids[s.code] = got["id"].(string)
	}
	status, _, got = gw.do(t, "POST", "/api/subscriptions/"+ids["paused-exact"]+"/pause", "", "", nil)
	require.Equal(t, http.StatusOK, status, "%v", got)

	codes := func(path string) []string {
		t.Helper()
		var out []string
		next := path
		for range 10 {
			items, cursor := listPage(t, gw, next)
			for _, it := range items {
				out = append(out, it["code"].(string))
			}
			if cursor == nil {
				return out
			}
			next = path + "&cursor=" + cursor.(string)
		}
		t.Fatalf("%s: too many pages", path)
		return nil
	}
	tests := []struct {
		query string
		want  []string
	}{
		{"?limit=2", []string{"paused-exact", "other", "inner", "glob", "exact"}},
		{"?eventType=shop.order.created&limit=2", []string{"paused-exact", "inner", "glob", "exact"}},
		{"?eventType=shop.order.created&status=ACTIVE", []string{"inner", "glob", "exact"}},
		{"?eventType=shop.order.created&clientId=c1", []string{"inner"}},
		{"?eventType=shop.order.*", []string{"glob"}},
		{"?eventType=shop.invoice.paid", []string{"other"}},
		{"?eventType=shop.nothing.here", nil},
		{"?status=PAUSED", []string{"paused-exact"}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, codes("/api/subscriptions"+tt.query))
		})
	}
}

// TestContractDeprecationHeader: API.md §1 step 4 — an event validated
// against a DEPRECATED version is accepted with Deprecation: true, also when
// it is a duplicate (validated all the same) or one item of a batch; an
// event of the CURRENT version gets no such header.
func TestContractDeprecationHeader(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, nil)
	status, _, got := gw.do(t, "POST", "/api/event-types", "application/json",
		`{"code":"shop.order.created","name":"x","versions":[{"version":"1.0","schema":{},"status":"CURRENT"},{"version":"2.0","schema":{},"status":"CURRENT"}]}`, nil)
	require.Equal(t, http.StatusCreated, status, "%v", got)
	status, _, got = gw.do(t, "PATCH", "/api/event-types/shop.order.created/versions/1.0", "application/json", `{"status":"DEPRECATED"}`, nil)
	require.Equal(t, http.StatusOK, status, "%v", got)
	ev := func(id, version string) string {
		ext := ""
		if version != "" {
			ext = `,"dataversion":"` + version + `"`
		}
		return `{"specversion":"1.0","id":"` + id + `","source":"/s","type":"shop.order.created","data":{}` + ext + `}`
	}
	tests := []struct {
		name, contentType, body string
		status                  int
		deprecation             string
	}{
		{"deprecated", "application/cloudevents+json", ev("a", "1.0"), 201, "true"},
		{"deprecated duplicate", "application/cloudevents+json", ev("a", "1.0"), 200, "true"},
		{"current", "application/cloudevents+json", ev("b", ""), 201, ""},
		{"current named", "application/cloudevents+json", ev("c", "2.0"), 201, ""},
		{"batch with a deprecated item", "application/cloudevents-batch+json", "[" + ev("d", "2.0") + "," + ev("e", "1.0") + "]", 201, "true"},
	}
	for _, tt := range tests { // in order: the duplicate follows its original
		status, hdr, got := gw.do(t, "POST", "/api/events", tt.contentType, tt.body, nil)
		require.Equal(t, tt.status, status, "%s: %v", tt.name, got)
		require.Equal(t, tt.deprecation, hdr.Get("Deprecation"), tt.name)
	}
}
