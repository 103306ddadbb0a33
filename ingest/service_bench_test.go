package ingest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/ingest"
	"github.com/hooklane/hooklane/storage/pipelinetest"
	"github.com/hooklane/hooklane/subscription"
)

// BenchmarkIngest measures Service.Ingest of one event matching one
// subscription on the embedded pipeline (SQLite, in-process queue), as
// cmd/hooklane wires it with tracing off. Compare it across commits to see
// what a change costs the ingest hot path.
func BenchmarkIngest(b *testing.B) {
	benchIngest(b, func(p *pipelinetest.Pipeline) *ingest.Service { return p.Ingest })
}

// benchIngest runs the ingest benchmark on a fresh pipeline, ingesting
// through the service svc returns for it.
func benchIngest(b *testing.B, svc func(p *pipelinetest.Pipeline) *ingest.Service) {
	b.Helper()
	p := pipelinetest.New(b, pipelinetest.Config{})
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := p.Store.EventTypeInsert(ctx, &schema.EventType{Code: "shop.order.created", Name: "x", Status: schema.TypeCurrent, CreatedAt: now, UpdatedAt: now}); err != nil {
		b.Fatal(err)
	}
	sub := &subscription.Subscription{
		ID: p.IDs.New(), Code: "orders", EventTypes: []subscription.Binding{{EventTypeCode: "shop.order.created"}},
		Target: "http://127.0.0.1:9/hook", CreatedAt: now, UpdatedAt: now,
	}
	sub.ApplyDefaults()
	if err := p.Store.SubscriptionInsert(ctx, sub); err != nil {
		b.Fatal(err)
	}
	s := svc(p)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		ev := cloudevent.Event{SpecVersion: "1.0", ID: fmt.Sprintf("e-%d", i), Source: "/bench", Type: "shop.order.created", Data: []byte(`{}`)}
		res, err := s.Ingest(ctx, &ingest.Request{Mode: ingest.ModeStructured, Events: []cloudevent.Event{ev}})
		if err != nil || len(res[0].Jobs) != 1 {
			b.Fatalf("ingest: %v", err)
		}
	}
}
