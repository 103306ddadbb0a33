package pull_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/ingest"
	"github.com/hooklane/hooklane/router/pull"
	"github.com/hooklane/hooklane/storage/pipelinetest"
	"github.com/hooklane/hooklane/subscription"
)

// TestTracingClaimAndReport checks that with tracing on a pull job's claim
// and its worker's reports are spans of the job's trace, children of its
// ingest span: a completion, and a failure recorded as an error with the
// retry decision.
func TestTracingClaimAndReport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	p := pipelinetest.New(t, pipelinetest.Config{DefaultPool: true})
	now := time.Now().UTC().Truncate(time.Millisecond)
	require.NoError(t, p.Store.EventTypeInsert(ctx, &schema.EventType{Code: "shop.order.created", Name: "x", Status: schema.TypeCurrent, CreatedAt: now, UpdatedAt: now}))
	sub := &subscription.Subscription{
		ID: p.IDs.New(), Code: "workers", Delivery: dispatch.DeliveryPull,
		EventTypes: []subscription.Binding{{EventTypeCode: "shop.order.created"}}, CreatedAt: now, UpdatedAt: now,
	}
	sub.ApplyDefaults()
	require.NoError(t, p.Store.SubscriptionInsert(ctx, sub))
	svc := ingest.New(ingest.Config{Store: p.Store, Validator: p.Registry, Matcher: p.Subs, Jobs: p.Jobs, IDs: p.IDs, TracerProvider: tp})
	workers := pull.New(pull.Config{Store: p.Store, Lifecycle: p.Jobs, TracerProvider: tp})

	for _, tt := range []struct {
		id, span string
		report   func(id string) (*dispatch.Job, error)
	}{
		{"e-1", "pull.complete", func(id string) (*dispatch.Job, error) {
			return workers.Complete(ctx, id, pull.Report{WorkerID: "w:1", StatusCode: 200})
		}},
		{"e-2", "pull.fail", func(id string) (*dispatch.Job, error) {
			return workers.Fail(ctx, id, pull.Report{WorkerID: "w:1", StatusCode: 500, ErrorMessage: "boom"})
		}},
	} {
		exp.Reset()
		ev := cloudevent.Event{SpecVersion: "1.0", ID: tt.id, Source: "/shop", Type: "shop.order.created", Data: []byte(`{}`)}
		_, err := svc.Ingest(ctx, &ingest.Request{Mode: ingest.ModeStructured, Events: []cloudevent.Event{ev}})
		require.NoError(t, err)
		claimed, err := workers.Claim(ctx, sub.ID, pull.ClaimParams{Worker: "w:1", Max: 1})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		_, err = tt.report(claimed[0].Job.ID)
		require.NoError(t, err)

		spans := map[string]tracetest.SpanStub{}
		for _, s := range exp.GetSpans() {
			spans[s.Name] = s
		}
		server := spans["POST /api/events"]
		for _, name := range []string{"pull.claim", tt.span} {
			s, ok := spans[name]
			require.True(t, ok, "%s recorded", name)
			require.Equal(t, server.SpanContext.TraceID(), s.SpanContext.TraceID(), name)
			require.Equal(t, server.SpanContext.SpanID(), s.Parent.SpanID(), "%s is a child of the ingest span", name)
		}
		require.Equal(t, trace.SpanKindConsumer, spans["pull.claim"].SpanKind)
		if tt.span == "pull.fail" {
			fail := spans["pull.fail"]
			require.Equal(t, codes.Error, fail.Status.Code)
			require.Equal(t, "boom", fail.Status.Description)
			var names []string
			for _, e := range fail.Events {
				names = append(names, e.Name)
			}
			require.ElementsMatch(t, []string{"exception", "retry scheduled"}, names)
		} else {
			require.Equal(t, codes.Unset, spans["pull.complete"].Status.Code)
		}
	}
}
