package router

import (
	"context"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/queue"
)

// tracerName names the tracer of the delivery spans.
const tracerName = "github.com/hooklane/hooklane/router"

// messageTraceContext returns ctx carrying the trace context a received
// message brought (dispatch.AttributeTraceParent), the ingest span of its
// job even when another instance ingested it. With tracing off, or a
// message without one, it returns ctx as it is.
func (r *Router) messageTraceContext(ctx context.Context, m *queue.Message) context.Context {
	if r.tracer == nil {
		return ctx
	}
	tp, ok := m.Attributes[dispatch.AttributeTraceParent]
	if !ok {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{dispatch.AttributeTraceParent: tp})
}

// startAttempt starts the CLIENT span of one delivery attempt, a child of
// the job's trace: the message's trace context in ctx, else the one the job
// keeps (a message sent before tracing was on has none), else a new trace.
// The transport sends the span's context on (webhook: the traceparent
// header). With tracing off it returns ctx and a span that does nothing.
func (r *Router) startAttempt(ctx context.Context, d *Delivery) (context.Context, trace.Span) {
	if r.tracer == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	j := d.Job
	if !trace.SpanContextFromContext(ctx).IsValid() && j.TraceParent != "" {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{dispatch.AttributeTraceParent: j.TraceParent})
	}
	attrs := []attribute.KeyValue{
		attribute.String("hooklane.job.id", j.ID),
		attribute.String("hooklane.job.kind", string(j.Kind)),
		attribute.Int("hooklane.attempt", d.Attempt),
	}
	if j.Subscription != "" {
		attrs = append(attrs, attribute.String("hooklane.subscription", j.Subscription))
	}
	if j.EventID != "" {
		attrs = append(attrs, attribute.String("hooklane.event.id", j.EventID))
	}
	// The host only: a target's path or query may carry a credential.
	if u, err := url.Parse(j.TargetURL); err == nil {
		attrs = append(attrs, attribute.String("server.address", u.Hostname()), attribute.String("url.scheme", u.Scheme))
	}
	return r.tracer.Start(ctx, "deliver", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...)) //nolint:spancheck // the caller ends the span it is handed
}

// endAttempt ends an attempt span with the attempt's outcome: the status
// code, and a failure recorded as the span's error.
func endAttempt(span trace.Span, out dispatch.Outcome, recordErr error) {
	if !span.IsRecording() {
		span.End()
		return
	}
	if out.Attempt.StatusCode != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", out.Attempt.StatusCode))
	}
	switch {
	case out.Err != nil:
		span.RecordError(out.Err)
		span.SetStatus(codes.Error, out.Err.Error())
	case recordErr != nil:
		span.RecordError(recordErr)
		span.SetStatus(codes.Error, recordErr.Error())
	}
	span.End()
}

// traceOutcome adds to the span in ctx, when it records, what the recorded
// attempt decided for the job: completed, a retry at a time, or discarded.
func traceOutcome(ctx context.Context, j *dispatch.Job) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{attribute.String("hooklane.job.status", string(j.Status))}
	name := "job " + string(j.Status)
	if j.NextAttemptAt != nil && j.Status == dispatch.StatusPending {
		name = "retry scheduled"
		attrs = append(attrs, attribute.String("hooklane.next_attempt_at", j.NextAttemptAt.UTC().Format(time.RFC3339Nano)))
	}
	span.AddEvent(name, trace.WithAttributes(attrs...))
}
