package webhook_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hooklane/hooklane/router/webhook"
	"github.com/hooklane/hooklane/subscription"
	"github.com/hooklane/hooklane/subscription/transform"
)

// runLog collects what OnTransformFunc is told.
type runLog struct {
	mu   sync.Mutex
	runs []webhook.TransformRun
}

func (l *runLog) add(r webhook.TransformRun) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = append(l.runs, r)
}

func (l *runLog) all() []webhook.TransformRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]webhook.TransformRun(nil), l.runs...)
}

// Every run of a delivery's transformation is reported with its outcome and
// is a span, a child of the attempt span, that names the outcome (and a
// failure's line and column).
func TestTransformRunReportedAndTraced(t *testing.T) {
	t.Parallel()
	var log runLog
	hooks := webhook.New(webhook.Config{
		AllowPrivateTargets: true, UserAgent: "hooklane/test",
		Transform:       transform.New(transform.Config{Timeout: 2 * time.Second}),
		OnTransformFunc: log.add,
	})
	t.Cleanup(hooks.Close)
	f := &transformFixture{hooks: hooks, rc: newReceiver(t), secret: subscription.NewSecret()}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })

	tests := []struct {
		name, code  string
		wantOutcome string
		wantFailure transform.Kind
		wantLine    int
	}{
		{"ok", `function handler(w) { w.payload = {n: 1}; return w; }`, "ok", "", 0},
		{"cancel", `function handler(w) { w.cancel = true; return w; }`, "cancelled", "", 0},
		{"throw", "function handler(w) {\n  throw new Error(\"boom\");\n}", "throw", transform.KindThrow, 2},
		{"invalid", `function handler(w) { return 42; }`, "invalid_result", transform.KindInvalidResult, 0},
		{"bad url", `function handler(w) { w.url = "ftp://x/y"; return w; }`, "invalid_result", transform.KindInvalidResult, 0},
	}
	for i, tt := range tests {
		ctx, attempt := tp.Tracer("test").Start(t.Context(), "deliver")
		f.hooks.Deliver(ctx, f.delivery(tt.code))
		attempt.End()

		runs := log.all()
		require.Len(t, runs, i+1, tt.name)
		run := runs[i]
		require.Equal(t, tt.wantFailure, run.Failure, tt.name)
		require.Equal(t, tt.wantOutcome == "cancelled", run.Cancelled, tt.name)
		require.Positive(t, run.Duration, tt.name)

		var span sdktrace.ReadOnlySpan
		for _, s := range rec.Ended() {
			if s.Name() == "transform" && s.Parent().SpanID() == attempt.SpanContext().SpanID() {
				span = s
			}
		}
		require.NotNil(t, span, "%s: a transform span under the attempt span", tt.name)
		attrs := map[attribute.Key]attribute.Value{}
		for _, kv := range span.Attributes() {
			attrs[kv.Key] = kv.Value
		}
		require.Equal(t, tt.wantOutcome, attrs["hooklane.transform.outcome"].AsString(), tt.name)
		if tt.wantFailure != "" {
			require.Equal(t, codes.Error, span.Status().Code, tt.name)
		} else {
			require.NotEqual(t, codes.Error, span.Status().Code, tt.name)
		}
		if tt.wantLine > 0 {
			require.Equal(t, int64(tt.wantLine), attrs["hooklane.transform.line"].AsInt64(), tt.name)
		}
	}

	// Tracing off: runs are still reported, no span is made.
	before := len(rec.Ended())
	f.hooks.Deliver(t.Context(), f.delivery(`function handler(w) { return w; }`))
	require.Len(t, log.all(), len(tests)+1)
	require.Len(t, rec.Ended(), before)
}
