package ingest_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hooklane/hooklane/ingest"
	"github.com/hooklane/hooklane/storage/pipelinetest"
)

// BenchmarkIngestTracingOn is BenchmarkIngest with tracing on at 100 %
// sampling (every span recorded and handed to an exporter that drops it):
// the cost of the spans themselves. With tracing off (BenchmarkIngest) no
// span is started.
func BenchmarkIngestTracingOn(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	benchIngest(b, func(p *pipelinetest.Pipeline) *ingest.Service {
		return ingest.New(ingest.Config{Store: p.Store, Validator: p.Registry, Matcher: p.Subs, Jobs: p.Jobs, IDs: p.IDs, TracerProvider: tp})
	})
}
