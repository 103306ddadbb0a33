package ingest

import (
	"context"
	"errors"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event/cloudevent"
)

// tracerName names the tracer of the ingest spans.
const tracerName = "github.com/hooklane/hooklane/ingest"

// ExtractTraceContext returns ctx carrying the W3C trace context of an
// ingest request's headers (traceparent, tracestate), which the request's
// span then continues. With tracing off (no Config.TracerProvider) it
// returns ctx as it is, touching nothing.
func (s *Service) ExtractTraceContext(ctx context.Context, h http.Header) context.Context {
	if s.tracer == nil {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(h))
}

// startRequest starts the SERVER span of an ingest request (API.md §6): it
// continues the request's trace context (ExtractTraceContext), else the
// traceparent extension of the request's first event that has one, else
// starts a trace. With tracing off it returns ctx and a span that does
// nothing, allocating nothing.
func (s *Service) startRequest(ctx context.Context, req *Request) (context.Context, trace.Span) {
	if s.tracer == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	if !trace.SpanContextFromContext(ctx).IsValid() {
		for i := range req.Events {
			ev := &req.Events[i]
			if tp := ev.Ext(cloudevent.ExtTraceParent); tp != "" {
				ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{ //nolint:fatcontext // once: the loop breaks right after
					cloudevent.ExtTraceParent: tp,
					cloudevent.ExtTraceState:  ev.Ext(cloudevent.ExtTraceState),
				})
				break
			}
		}
	}
	return s.tracer.Start(ctx, "POST /api/events", trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes( //nolint:spancheck // the caller ends the span it is handed
		attribute.String("http.request.method", http.MethodPost),
		attribute.String("http.route", "/api/events"),
		attribute.Int("hooklane.events", len(req.Events)),
	))
}

// endRequest ends the request span with the outcome of the ingest: a
// refused request (*Error, a 4xx) is the producer's fault and not a span
// error; any other error is.
func endRequest(span trace.Span, results []Result, err error) {
	if !span.IsRecording() {
		span.End()
		return
	}
	var ie *Error
	switch {
	case errors.As(err, &ie):
		span.SetAttributes(attribute.Int("http.response.status_code", ie.Status))
	case err != nil:
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	default:
		jobs := 0
		for _, r := range results {
			jobs += len(r.Jobs)
		}
		span.SetAttributes(attribute.Int("hooklane.jobs", jobs))
	}
	span.End()
}

// startChild starts an internal child span of the request span (validation,
// matching, the store write, the queue send); a span that does nothing when
// tracing is off.
func (s *Service) startChild(ctx context.Context, name string) (context.Context, trace.Span) {
	if s.tracer == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	return s.tracer.Start(ctx, name) //nolint:spancheck // the caller ends the span it is handed
}

// endChild ends a child span, recording err when there is one.
func endChild(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// traceJobs gives the jobs the trace context of the request span in ctx, so
// that their deliveries, on any instance, continue the ingest trace. With
// tracing off it does nothing.
func (s *Service) traceJobs(ctx context.Context, jobs []*dispatch.Job) {
	if s.tracer == nil || len(jobs) == 0 {
		return
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	tp := c[cloudevent.ExtTraceParent]
	for _, j := range jobs {
		j.TraceParent = tp
	}
}
