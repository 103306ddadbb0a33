package pull

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/hooklane/hooklane/dispatch"
)

// tracerName names the tracer of the pull spans.
const tracerName = "github.com/hooklane/hooklane/pull"

// traceJob records one span of a pull job's life in the job's trace (the
// context it keeps, dispatch.Job.TraceParent: its ingest span), from start
// to now: a claim (CONSUMER: the worker takes the job), or a worker's
// report (its outcome; a failure recorded as the span's error, the retry
// decision as an event). With tracing off it does nothing.
func (s *Service) traceJob(ctx context.Context, name string, start time.Time, j *dispatch.Job, worker string, kind trace.SpanKind, failure error) {
	if s.tracer == nil || j == nil {
		return
	}
	if j.TraceParent != "" {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{dispatch.AttributeTraceParent: j.TraceParent})
	}
	attrs := []attribute.KeyValue{
		attribute.String("hooklane.job.id", j.ID),
		attribute.String("hooklane.worker", worker),
		attribute.Int("hooklane.attempt", j.AttemptCount),
		attribute.String("hooklane.job.status", string(j.Status)),
	}
	if j.Subscription != "" {
		attrs = append(attrs, attribute.String("hooklane.subscription", j.Subscription))
	}
	_, span := s.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	if failure != nil {
		span.RecordError(failure)
		span.SetStatus(codes.Error, failure.Error())
		if j.Status == dispatch.StatusPending && j.NextAttemptAt != nil {
			span.AddEvent("retry scheduled", trace.WithAttributes(
				attribute.String("hooklane.next_attempt_at", j.NextAttemptAt.UTC().Format(time.RFC3339Nano))))
		}
	}
	span.End()
}
