package webhook

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hooklane/hooklane/event/cloudevent"
)

// setTraceParent sets the traceparent header to the span in ctx, the
// router's attempt span while tracing is on (API.md §6), replacing the
// event's own: the receiver's span then continues the delivery's. The
// tracestate header stays the event's, unchanged. With tracing off ctx
// holds no span and h is left as it is.
func setTraceParent(ctx context.Context, h http.Header) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return
	}
	// Version 00: version-traceid-parentid-flags, lower-case hex.
	const size = 2 + 1 + 32 + 1 + 16 + 1 + 2
	tid, sid := sc.TraceID(), sc.SpanID()
	b := make([]byte, 0, size)
	b = append(b, "00-"...)
	b = hex.AppendEncode(b, tid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, sid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, []byte{byte(sc.TraceFlags())})
	h.Set(cloudevent.ExtTraceParent, string(b))
}

// tracerName names the tracer of the transformation spans.
const tracerName = "github.com/hooklane/hooklane/router/webhook"

// startTransformSpan starts the span of one transformation run (API.md §16),
// a child of the attempt span in ctx and made by that span's provider: the
// transport needs no tracer of its own. With tracing off, or an attempt
// span that does not record, it starts nothing and returns ctx.
func startTransformSpan(ctx context.Context) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return parent.TracerProvider().Tracer(tracerName).Start(ctx, "transform") //nolint:spancheck // endTransformSpan ends it
}

// endTransformSpan ends a transformation span with the run's outcome:
// hooklane.transform.outcome is ok, cancelled or the failure's kind, and a
// failure is the span's error with its line and column.
func endTransformSpan(span trace.Span, run TransformRun, err error) {
	if !span.IsRecording() {
		return
	}
	outcome := "ok"
	switch {
	case run.Cancelled:
		outcome = "cancelled"
	case run.Failure != "":
		outcome = string(run.Failure)
	case err != nil:
		outcome = "not_run"
	}
	span.SetAttributes(attribute.String("hooklane.transform.outcome", outcome))
	if err != nil && !run.Cancelled {
		if te, ok := errors.AsType[*TransformError](err); ok && te.Line > 0 {
			span.SetAttributes(attribute.Int("hooklane.transform.line", te.Line), attribute.Int("hooklane.transform.column", te.Column))
		}
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
