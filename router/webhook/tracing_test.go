package webhook_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/router/webhook"
	"github.com/hooklane/hooklane/subscription"
)

// attemptSpan returns ctx carrying the span context of a delivery attempt.
func attemptSpan(ctx context.Context, flags trace.TraceFlags) context.Context {
	tid, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	return trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags}))
}

func TestRequestTraceParent(t *testing.T) {
	t.Parallel()
	m := webhook.New(webhook.Config{AllowPrivateTargets: true, UserAgent: "hooklane/test"})
	t.Cleanup(m.Close)
	ev := storedEvent()
	ev.Event.Extensions = map[string]any{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01", "tracestate": "rojo=1"}
	d := &router.Delivery{
		Job: eventJob(), Event: ev, Attempt: 1,
		Subscription: &subscription.Subscription{Secrets: []subscription.Secret{{Value: subscription.NewSecret()}}},
	}
	tests := []struct {
		name       string
		ctx        context.Context
		wantParent string
	}{
		{"tracing off: the event's", context.Background(), "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01"},
		{"sampled attempt span", attemptSpan(context.Background(), trace.FlagsSampled), "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"},
		{"unsampled attempt span", attemptSpan(context.Background(), 0), "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, err := m.Request(tt.ctx, d)
			require.NoError(t, err)
			require.Equal(t, tt.wantParent, req.Header.Get("traceparent"))
			require.Equal(t, "rojo=1", req.Header.Get("tracestate"), "tracestate passes unchanged")
		})
	}
}

// BenchmarkRequestTraced is BenchmarkRequest with tracing on: the attempt's
// span context goes out as the traceparent header.
func BenchmarkRequestTraced(b *testing.B) {
	m := webhook.New(webhook.Config{AllowPrivateTargets: true, UserAgent: "hooklane/bench"})
	defer m.Close()
	d := &router.Delivery{
		Job: eventJob(), Event: storedEvent(), Attempt: 1,
		Subscription: &subscription.Subscription{Secrets: []subscription.Secret{{Value: subscription.NewSecret()}}},
	}
	ctx := attemptSpan(context.Background(), trace.FlagsSampled)
	b.ReportAllocs()
	for b.Loop() {
		req, err := m.Request(ctx, d)
		if err != nil || req.Header.Get("traceparent") == "" {
			b.Fatalf("request: %v", err)
		}
	}
}
