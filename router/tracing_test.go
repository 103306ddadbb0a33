package router_test

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/dispatch/pollers"
	"github.com/hooklane/hooklane/dispatch/pool"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/ingest"
	"github.com/hooklane/hooklane/queue"
	"github.com/hooklane/hooklane/queue/memqueue"
	"github.com/hooklane/hooklane/queue/sqsqueue"
	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/router/webhook"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/subscription"
)

// Trace context of the producer in the tracing tests.
const (
	producerTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	eventParent     = "00f067aa0ba902b7"
	headerParent    = "b7ad6b7169203331"
	eventTraceState = "rojo=00f067aa0ba902b7"
)

// tracedGW is an ingest instance and a delivery instance sharing a store
// and a queue, each with its own tracer provider exporting to one
// in-memory exporter: the delivery's trace context can only reach it
// through the queue and the store.
type tracedGW struct {
	st       *sqlitestore.Store
	ingest   *ingest.Service
	exporter *tracetest.InMemoryExporter
	// requests are the headers of the deliveries the receiver got.
	mu       sync.Mutex
	requests []http.Header
}

// newTracedGW starts the two instances on q; tracing is on when traced.
// The receiver answers 503 to the first delivery and 200 after.
func newTracedGW(t *testing.T, q queue.Queue, traced bool) *tracedGW {
	t.Helper()
	ctx := context.Background()
	g := &tracedGW{exporter: tracetest.NewInMemoryExporter()}
	var ingestTP, routerTP trace.TracerProvider
	if traced {
		a := sdktrace.NewTracerProvider(sdktrace.WithSyncer(g.exporter))
		b := sdktrace.NewTracerProvider(sdktrace.WithSyncer(g.exporter))
		t.Cleanup(func() {
			require.NoError(t, a.Shutdown(context.Background()))
			require.NoError(t, b.Shutdown(context.Background()))
		})
		ingestTP, routerTP = a, b
	}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.requests = append(g.requests, r.Header.Clone())
		n := len(g.requests)
		g.mu.Unlock()
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(recv.Close)

	st, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: filepath.Join(t.TempDir(), "h.db")})
	require.NoError(t, err)
	g.st = st
	ids := idgen.New(nil)
	now := time.Now().UTC().Truncate(time.Millisecond)
	require.NoError(t, st.PoolInsert(ctx, &pool.Pool{
		ID: ids.New(), Code: pool.DefaultPoolCode, Name: "Default", Burst: 1,
		Concurrency: pool.DefaultPoolConcurrency, CreatedAt: now, UpdatedAt: now,
	}))
	require.NoError(t, st.EventTypeInsert(ctx, &schema.EventType{Code: "shop.order.created", Name: "x", Status: schema.TypeCurrent, CreatedAt: now, UpdatedAt: now}))
	sub := &subscription.Subscription{
		ID: ids.New(), Code: "orders", EventTypes: []subscription.Binding{{EventTypeCode: "shop.order.created"}},
		Target: recv.URL + "/hook", Secrets: []subscription.Secret{{Value: subscription.NewSecret()}},
		Retry: dispatch.Retry{InitialBackoffSeconds: 1, MaxBackoffSeconds: 1}, CreatedAt: now, UpdatedAt: now,
	}
	sub.ApplyDefaults()
	require.NoError(t, st.SubscriptionInsert(ctx, sub))

	subs := subscription.NewCache(subscription.CacheConfig{Store: st, RefreshInterval: 50 * time.Millisecond})
	jobs := dispatch.NewLifecycle(dispatch.LifecycleConfig{Store: st, Queue: q, NewID: ids.New})
	g.ingest = ingest.New(ingest.Config{
		Store: st, Validator: schema.NewRegistry(schema.RegistryConfig{Store: st}), Matcher: subs, Jobs: jobs, IDs: ids,
		TracerProvider: ingestTP,
	})
	med := webhook.New(webhook.Config{AllowPrivateTargets: true, UserAgent: "hooklane/test"})
	rt := router.New(router.Config{
		Queue: q, Store: st, Subscriptions: subs, Lifecycle: jobs, Pools: router.NewPools(st), Transport: med,
		WorkerID: "test:2", ReceiveWait: 200 * time.Millisecond, TracerProvider: routerTP,
	})
	pending := pollers.NewPending(pollers.PendingConfig{Jobs: jobs, Interval: 50 * time.Millisecond})
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{subs.Run, rt.Run, pending.Run} {
		wg.Go(func() { ; _ = run(runCtx) })
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		med.Close()
		subs.Close()
		require.NoError(t, st.Close())
	})
	return g
}

// post ingests one order event with the extensions and request headers
// given and returns its job, once the second delivery completed it.
func (g *tracedGW) post(t *testing.T, ext map[string]string, header http.Header) *dispatch.Job {
	t.Helper()
	ev := cloudevent.Event{SpecVersion: "1.0", ID: "o-1", Source: "/shop", Type: "shop.order.created", Data: []byte(`{}`), Extensions: map[string]any{}}
	for k, v := range ext {
		ev.Extensions[k] = v
	}
	ctx := g.ingest.ExtractTraceContext(t.Context(), header)
	res, err := g.ingest.Ingest(ctx, &ingest.Request{Mode: ingest.ModeStructured, Events: []cloudevent.Event{ev}})
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.Len(t, res[0].Jobs, 1)
	id := res[0].Jobs[0].ID
	var job *dispatch.Job
	require.Eventually(t, func() bool {
		job, err = g.st.JobGetByID(context.Background(), id)
		require.NoError(t, err)
		return job.Status == dispatch.StatusCompleted
	}, 60*time.Second, 10*time.Millisecond)
	stored, err := g.st.EventGetByID(context.Background(), job.EventID)
	require.NoError(t, err)
	for k, v := range ext {
		require.Equal(t, v, stored.Event.Ext(k), "the stored event keeps the producer's %s", k)
	}
	return job
}

// spans waits until the exporter holds the ingest spans and n delivery
// spans, and returns them by name.
func (g *tracedGW) spans(t *testing.T, n int) map[string][]tracetest.SpanStub {
	t.Helper()
	var byName map[string][]tracetest.SpanStub
	require.Eventually(t, func() bool {
		byName = map[string][]tracetest.SpanStub{}
		for _, s := range g.exporter.GetSpans() {
			byName[s.Name] = append(byName[s.Name], s)
		}
		return len(byName["deliver"]) == n && len(byName["POST /api/events"]) == 1
	}, 60*time.Second, 10*time.Millisecond)
	return byName
}

func (g *tracedGW) headers() []http.Header {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]http.Header(nil), g.requests...)
}

// queues returns the queue adapters the tracing tests run on: memqueue,
// and a fresh FIFO queue on the test stack's SQS-compatible server.
func queues(t *testing.T) map[string]func(t *testing.T) queue.Queue {
	t.Helper()
	return map[string]func(t *testing.T) queue.Queue{
		"memqueue": func(t *testing.T) queue.Queue {
			t.Helper()
			q := memqueue.New(memqueue.Config{VisibilityTimeout: time.Minute})
			t.Cleanup(func() { _ = q.Close() })
			return q
		},
		"sqsqueue": func(t *testing.T) queue.Queue {
			t.Helper()
			endpoint := cmp.Or(os.Getenv("HOOKLANE_TEST_SQS_ENDPOINT"), "http://127.0.0.1:4566")
			client := sqs.New(sqs.Options{
				Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
				Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
			})
			suffix := make([]byte, 8)
			_, _ = rand.Read(suffix)
			url, err := sqsqueue.CreateQueue(t.Context(), client, "hooklane-trace-"+hex.EncodeToString(suffix)+".fifo", sqsqueue.CreateQueueParams{})
			require.NoError(t, err, "create a queue at %s (is the stack running? localstack/stack.sh start)", endpoint)
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, err := client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
				require.NoError(t, err)
			})
			q, err := sqsqueue.New(t.Context(), sqsqueue.Config{QueueURL: url, Client: client})
			require.NoError(t, err)
			return q
		},
	}
}

// TestTracingSpanTree checks the trace of an event from ingest to delivery
// across the queue, on both queue adapters (API.md §6): the ingest SERVER
// span continues the request's traceparent, else the event's, else starts
// a trace; validation, matching, the store write and the queue send are its
// children; each delivery attempt (a failed one, then its retry, re-queued
// by the pending poller) is a CLIENT span child of the ingest span, made by
// another instance; each delivered traceparent names its attempt's span,
// and tracestate is the event's, unchanged.
func TestTracingSpanTree(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		ext        map[string]string
		header     http.Header
		wantParent string // the ingest span's remote parent; "" starts a trace
	}{
		{
			name:       "request header",
			ext:        map[string]string{"traceparent": "00-" + producerTraceID + "-" + eventParent + "-01", "tracestate": eventTraceState},
			header:     http.Header{"Traceparent": {"00-" + producerTraceID + "-" + headerParent + "-01"}},
			wantParent: headerParent,
		},
		{
			name:       "event extension",
			ext:        map[string]string{"traceparent": "00-" + producerTraceID + "-" + eventParent + "-01", "tracestate": eventTraceState},
			wantParent: eventParent,
		},
		{name: "new trace"},
	}
	for qname, newQueue := range queues(t) {
		for _, tt := range cases {
			t.Run(qname+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				g := newTracedGW(t, newQueue(t), true)
				job := g.post(t, tt.ext, tt.header)
				spans := g.spans(t, 2)

				server := spans["POST /api/events"][0]
				require.Equal(t, trace.SpanKindServer, server.SpanKind)
				traceID := server.SpanContext.TraceID()
				if tt.wantParent != "" {
					require.Equal(t, producerTraceID, traceID.String())
					require.True(t, server.Parent.IsRemote())
					require.Equal(t, tt.wantParent, server.Parent.SpanID().String())
				} else {
					require.False(t, server.Parent.IsValid(), "a new trace")
				}
				for _, name := range []string{"ingest.validate", "ingest.match", "ingest.store", "ingest.enqueue"} {
					require.Len(t, spans[name], 1, name)
					require.Equal(t, server.SpanContext.SpanID(), spans[name][0].Parent.SpanID(), "%s is a child of the ingest span", name)
					require.Equal(t, traceID, spans[name][0].SpanContext.TraceID())
				}
				require.Equal(t, "00-"+traceID.String()+"-"+server.SpanContext.SpanID().String()+"-01", job.TraceParent,
					"the job keeps the ingest span's context")

				deliveries := spans["deliver"]
				headers := g.headers()
				require.Len(t, headers, 2)
				for i, d := range deliveries {
					require.Equal(t, trace.SpanKindClient, d.SpanKind)
					require.Equal(t, traceID, d.SpanContext.TraceID())
					require.Equal(t, server.SpanContext.SpanID(), d.Parent.SpanID(), "attempt %d is a child of the ingest span", i+1)
					require.True(t, d.Parent.IsRemote(), "attempt %d continues the trace through the queue", i+1)
					require.Equal(t, "00-"+traceID.String()+"-"+d.SpanContext.SpanID().String()+"-01", headers[i].Get("traceparent"),
						"delivery %d names its attempt span as parent", i+1)
					require.Equal(t, tt.ext["tracestate"], headers[i].Get("tracestate"), "tracestate passes unchanged")
				}
				require.Equal(t, codes.Error, deliveries[0].Status.Code)
				var names []string
				for _, e := range deliveries[0].Events {
					names = append(names, e.Name)
				}
				require.ElementsMatch(t, []string{"retry scheduled", "exception"}, names, "the retry decision and the error")
				require.Equal(t, codes.Unset, deliveries[1].Status.Code)
				require.Equal(t, "job COMPLETED", deliveries[1].Events[0].Name)
			})
		}
	}
}

// TestTracingOffChangesNothing checks that with tracing off the delivered
// trace headers are the event's own, and the job and its messages carry no
// trace context.
func TestTracingOffChangesNothing(t *testing.T) {
	t.Parallel()
	g := newTracedGW(t, queues(t)["memqueue"](t), false)
	tp := "00-" + producerTraceID + "-" + eventParent + "-01"
	job := g.post(t, map[string]string{"traceparent": tp, "tracestate": eventTraceState},
		http.Header{"Traceparent": {"00-" + producerTraceID + "-" + headerParent + "-01"}})
	require.Empty(t, job.TraceParent)
	require.Nil(t, dispatch.Message(job, nil).Attributes)
	for _, h := range g.headers() {
		require.Equal(t, tp, h.Get("traceparent"))
		require.Equal(t, eventTraceState, h.Get("tracestate"))
	}
	require.Empty(t, g.exporter.GetSpans())
}
