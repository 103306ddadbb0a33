package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TracingConfig is OpenTelemetry tracing as the standard OTEL_* variables
// configure it (API.md §9). Tracing is on when an OTLP endpoint is set and
// the SDK is not disabled; spans go out as OTLP over HTTP (protobuf).
type TracingConfig struct {
	// Enabled is true when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
	// OTEL_EXPORTER_OTLP_ENDPOINT is set, unless OTEL_SDK_DISABLED=true or
	// OTEL_TRACES_EXPORTER=none.
	Enabled bool
	// Endpoint is the full URL spans are posted to:
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else
	// OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces appended (the OTLP
	// exporter specification's rule).
	Endpoint string
}

// tracingConfig reads the OTEL_* variables that switch tracing on. The
// SDK reads the others itself from the process environment: headers,
// timeout, compression (OTEL_EXPORTER_OTLP_*), the sampler
// (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG; default parentbased_always_on),
// the batch span processor (OTEL_BSP_*) and the resource
// (OTEL_SERVICE_NAME, default hooklane; OTEL_RESOURCE_ATTRIBUTES).
func tracingConfig(getenv func(string) string) TracingConfig {
	endpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if endpoint == "" {
		if base := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); base != "" {
			endpoint = strings.TrimSuffix(base, "/") + "/v1/traces"
		}
	}
	off := strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") ||
		strings.EqualFold(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")), "none")
	return TracingConfig{Enabled: endpoint != "" && !off, Endpoint: endpoint}
}

// newTracerProvider returns the tracer provider of cfg: nil when tracing is
// off (the packages then start no span), else an SDK provider batching
// spans to an OTLP/HTTP exporter. The caller shuts it down.
func newTracerProvider(ctx context.Context, cfg *TracingConfig) (*sdktrace.TracerProvider, error) {
	if !cfg.Enabled {
		return nil, nil //nolint:nilnil // nil is tracing off
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(cfg.Endpoint))
	if err != nil {
		return nil, fmt.Errorf("create OTLP trace exporter for %s: %w", cfg.Endpoint, err)
	}
	// Later options win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// override the defaults.
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", "hooklane"), attribute.String("service.version", version)),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("build trace resource: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

// shutdownTracing flushes the spans still batched and stops the exporter,
// within timeout.
func shutdownTracing(tp *sdktrace.TracerProvider, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("shut down tracing: %w", err)
	}
	return nil
}

// withTraceIDs wraps h so that every record logged with a context that
// carries a span gets its trace_id and span_id attributes.
func withTraceIDs(h slog.Handler) slog.Handler {
	return traceIDHandler{h}
}

type traceIDHandler struct{ slog.Handler }

// Handle adds the span's ids, when ctx has a span, and passes r on.
func (h traceIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r) //nolint:wrapcheck // a handler passes its inner handler's error on
}

// WithAttrs keeps the wrapper around the derived handler.
func (h traceIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return traceIDHandler{h.Handler.WithAttrs(attrs)}
}

// WithGroup keeps the wrapper around the derived handler.
func (h traceIDHandler) WithGroup(name string) slog.Handler {
	return traceIDHandler{h.Handler.WithGroup(name)}
}
