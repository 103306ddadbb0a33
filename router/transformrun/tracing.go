package transformrun

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerName names the tracer of the transformation spans.
const tracerName = "github.com/hooklane/hooklane/router/transformrun"

// startSpan starts the span of one transformation run (API.md §16), a
// child of the attempt span in ctx and made by that span's provider: the
// runner needs no tracer of its own. With tracing off, or an attempt span
// that does not record, it starts nothing and returns ctx.
func startSpan(ctx context.Context) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return parent.TracerProvider().Tracer(tracerName).Start(ctx, "transform") //nolint:spancheck // endSpan ends it
}

// endSpan ends a transformation span with the run's outcome:
// hooklane.transform.outcome is ok, cancelled or the failure's kind, and a
// failure is the span's error with its line and column.
func endSpan(span trace.Span, run Run, err error) {
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
		if te, ok := errors.AsType[*Error](err); ok && te.Line > 0 {
			span.SetAttributes(attribute.Int("hooklane.transform.line", te.Line), attribute.Int("hooklane.transform.column", te.Column))
		}
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
