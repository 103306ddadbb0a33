package worker_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hooklane/hooklane/api"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/ingest"
	"github.com/hooklane/hooklane/router/pull"
	"github.com/hooklane/hooklane/router/pull/worker"
	"github.com/hooklane/hooklane/storage/pipelinetest"
	"github.com/hooklane/hooklane/storage/sqlitestore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// gateway starts the real API server over SQLite on 127.0.0.1 with a pull
// subscription to order.created, and returns its URL, the store and the
// subscription id.
func gateway(t *testing.T) (string, *sqlitestore.Store, string) {
	t.Helper()
	p := pipelinetest.New(t, pipelinetest.Config{})
	st, q, ids, subs, jobs, svc := p.Store, p.Queue, p.IDs, p.Subs, p.Jobs, p.Ingest
	srv := httptest.NewServer(api.New(api.Config{
		Store: st, Queue: q, Ingest: svc, Jobs: jobs, Pull: pull.New(pull.Config{Store: st, Lifecycle: jobs}), Subscriptions: subs, IDs: ids,
		Services: api.Services(*p.Services(&pipelinetest.ServicesConfig{})),
		Limits:   ingest.Limits{MaxEventBytes: 256 << 10, MaxRequestBytes: 4 << 20, MaxBatch: 100},
	}).Handler())
	t.Cleanup(srv.Close)
	post(t, srv.URL+"/api/event-types", `{"code":"order.created","name":"Order created"}`, "application/json")
	body := post(t, srv.URL+"/api/subscriptions", `{"code":"w","eventTypes":[{"eventTypeCode":"order.created"}],"delivery":"pull",
		"retry":{"maxAttempts":1,"initialBackoffSeconds":1,"maxBackoffSeconds":1}}`, "application/json")
	_, rest, ok := strings.Cut(body, `"id":"`)
	require.True(t, ok, body)
	id, _, _ := strings.Cut(rest, `"`)
	return srv.URL, st, id
}

func post(t *testing.T, url, body, ct string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", ct)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Less(t, resp.StatusCode, 300, string(b))
	return string(b)
}

func TestRunCompletesAndFails(t *testing.T) {
	t.Parallel()
	base, st, sub := gateway(t)
	for _, id := range []string{"ok-1", "bad-1"} {
		post(t, base+"/api/events", fmt.Sprintf(`{"specversion":"1.0","id":%q,"source":"/t","type":"order.created","data":{}}`, id),
			"application/cloudevents+json")
	}
	ctx, cancel := context.WithCancel(t.Context())
	var mu sync.Mutex
	seen := map[string]string{}
	c := &worker.Client{BaseURL: base, SubscriptionID: sub, WorkerID: "test:1", Wait: time.Second, HeartbeatInterval: 10 * time.Millisecond}
	done := make(chan error, 1)
	go func() {
		done <- c.Run(ctx, func(_ context.Context, j *worker.Job) error {
			mu.Lock()
			seen[j.Event.ID] = j.ID
			n := len(seen)
			mu.Unlock()
			// Long enough for a few heartbeats.
			time.Sleep(50 * time.Millisecond) //nolint:forbidigo // the handler's work is the behaviour under test: heartbeats are sent while it runs
			if n == 2 {
				defer cancel()
			}
			if strings.HasPrefix(j.Event.ID, "bad") {
				return errors.New("cannot handle")
			}
			return nil
		})
	}()
	require.NoError(t, <-done, "Run stops cleanly on cancel")
	require.Len(t, seen, 2)
	ok, err := st.JobGetByID(t.Context(), seen["ok-1"])
	require.NoError(t, err)
	require.Equal(t, dispatch.StatusCompleted, ok.Status)
	require.Equal(t, "test:1", ok.Attempts[len(ok.Attempts)-1].Worker)
	bad, err := st.JobGetByID(t.Context(), seen["bad-1"])
	require.NoError(t, err)
	require.Equal(t, dispatch.StatusError, bad.Status, "one attempt allowed")
	require.Equal(t, "cannot handle", *bad.LastError)
}

// TestRunBacksOffOnErrors: failed claims are retried with exponential
// backoff, so only a few claims fit in the 300 ms after the first one.
func TestRunBacksOffOnErrors(t *testing.T) {
	t.Parallel()
	// The 300 ms start at the first claim, not before Run: on a loaded
	// machine the first claim alone can take longer than that.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		calls++
		if calls == 1 {
			time.AfterFunc(300*time.Millisecond, cancel)
		}
		mu.Unlock()
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	c := &worker.Client{BaseURL: srv.URL, SubscriptionID: "s", MinBackoff: 50 * time.Millisecond, MaxBackoff: time.Second}
	require.NoError(t, c.Run(ctx, func(context.Context, *worker.Job) error { return nil }))
	mu.Lock()
	defer mu.Unlock()
	require.Positive(t, calls)
	require.LessOrEqual(t, calls, 5, "backoff 50+100+200 ms bounds the calls in 300 ms")
}

// TestRunHeartbeatsWhileHandlerRuns: while a handler runs, the client
// extends the job's lease: the stored lease moves forward before the
// handler returns.
func TestRunHeartbeatsWhileHandlerRuns(t *testing.T) {
	t.Parallel()
	base, st, sub := gateway(t)
	post(t, base+"/api/events", `{"specversion":"1.0","id":"hb-1","source":"/t","type":"order.created","data":{}}`, "application/cloudevents+json")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	extended := make(chan struct{})
	c := &worker.Client{BaseURL: base, SubscriptionID: sub, WorkerID: "test:hb", Wait: time.Second, HeartbeatInterval: 20 * time.Millisecond}
	done := make(chan error, 1)
	go func() {
		done <- c.Run(ctx, func(_ context.Context, j *worker.Job) error {
			first := j.LeaseExpiresAt
			if first == nil {
				return errors.New("claimed job has no lease")
			}
			deadline := time.After(60 * time.Second)
			for {
				stored, err := st.JobGetByID(ctx, j.ID)
				if err == nil && stored.LeaseExpiresAt != nil && stored.LeaseExpiresAt.After(*first) {
					close(extended)
					return nil
				}
				select {
				case <-deadline:
					return errors.New("lease never extended")
				case <-time.After(10 * time.Millisecond):
				}
			}
		})
	}()
	select {
	case <-extended:
	case <-time.After(90 * time.Second):
		t.Fatal("the client sent no heartbeat that extended the lease")
	}
	cancel()
	require.NoError(t, <-done)
}
