package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/hooklane/hooklane/api/metrics"
	"github.com/hooklane/hooklane/dispatch"
)

// The hooks run on every ingested event, delivery attempt and request:
// they must stay cheap next to the store write each accompanies.
func BenchmarkObserve(b *testing.B) {
	m := metrics.New(metrics.Config{
		TypeKnownFunc: func(context.Context, string) (bool, error) { return true, nil },
		PoolCodeFunc:  func(string) string { return "default" },
	})
	ctx := context.Background()
	b.Run("ingest", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.ObserveIngest(ctx, "shop.order.created", "accepted", 1)
		}
	})
	job := &dispatch.Job{Status: dispatch.StatusCompleted, CreatedAt: time.Now()}
	b.Run("attempt", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.ObserveAttempt(job, dispatch.Outcome{Attempted: true, Attempt: dispatch.Attempt{StatusCode: 200, DurationMs: 30}})
		}
	})
	b.Run("http", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.ObserveHTTP("POST", "/api/events", 201, 2*time.Millisecond)
		}
	})
}
