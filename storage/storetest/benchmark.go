package storetest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/stream"
)

// benchParallelism is the number of callers per GOMAXPROCS in the parallel
// benchmarks.
const benchParallelism = 16

// Bench runs the shared store benchmarks against the stores newStore
// returns, one fresh store per benchmark:
//
//   - EventIngest: one event with two jobs and their three status events
//     per call, from one goroutine and from 16 per CPU (where group commit
//     shows).
//   - JobUpdateClaim: read a QUEUED job and move it to IN_PROGRESS with
//     JobUpdate, as the router's claim does.
func Bench(b *testing.B, newStore NewStoreFunc) {
	b.Run("EventIngest", func(b *testing.B) {
		s := newStore(b)
		ids := idgen.New(nil)
		ctx := b.Context()
		b.ReportAllocs()
		for b.Loop() {
			benchIngestOne(ctx, b, s, ids)
		}
	})
	b.Run("EventIngestParallel", func(b *testing.B) {
		s := newStore(b)
		ids := idgen.New(nil)
		ctx := b.Context()
		b.ReportAllocs()
		// Many concurrent callers, as HTTP handlers are: what group commit
		// is for.
		b.SetParallelism(benchParallelism)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				benchIngestOne(ctx, b, s, ids)
			}
		})
	})
	b.Run("JobUpdateClaim", func(b *testing.B) {
		benchClaim(b, newStore, false)
	})
	b.Run("JobUpdateClaimParallel", func(b *testing.B) {
		benchClaim(b, newStore, true)
	})
}

// benchEvent returns an event as the ingest pipeline stores it, with two
// jobs and their status events.
func benchEvent(ids *idgen.Generator) dispatch.EventIngestItem {
	now := time.Now().UTC().Truncate(time.Millisecond)
	id := ids.New()
	ev := &event.Event{
		ID:         id,
		ReceivedAt: now,
		DedupKey:   "/bench\x00" + id,
		Event: cloudevent.Event{
			SpecVersion: cloudevent.SpecVersion, ID: id, Source: "/bench", Type: "order.created",
			Subject: "order/1", Time: now, DataContentType: "application/json",
			Data:       []byte(`{"orderId":"o-1","amount":12.5,"items":[{"sku":"a","qty":1}]}`),
			Extensions: map[string]any{"messagegroup": "g-1"},
		},
	}
	item := dispatch.EventIngestItem{Event: ev}
	item.StatusEvents = append(item.StatusEvents, stream.Event{ID: ids.New(), Type: stream.TypeEventAccepted, Time: now, Subject: id})
	for _, sub := range []string{"sub-a", "sub-b"} {
		j := &dispatch.Job{
			ID: idgen.Derived(now, id, sub), Kind: dispatch.KindEvent, Code: "order.created", EventID: id,
			SubscriptionID: sub, Subscription: sub, TargetURL: "http://127.0.0.1:9/hook", Mode: dispatch.ModeImmediate,
			Delivery: dispatch.DeliveryPush, MessageGroup: "g-1", TimeoutSeconds: 30, MaxAgeSeconds: 86400,
			Retry: dispatch.Retry{}.WithDefaults(), Status: dispatch.StatusQueued, MaxAttempts: 8,
			CreatedAt: now, UpdatedAt: now,
		}
		item.Jobs = append(item.Jobs, j)
		item.StatusEvents = append(item.StatusEvents, j.StatusEvent(ids.New(), stream.TypeDispatchCreated, now))
	}
	return item
}

func benchIngestOne(ctx context.Context, b *testing.B, s Store, ids *idgen.Generator) {
	res, err := s.EventIngest(ctx, &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{benchEvent(ids)}})
	if err != nil || len(res) != 1 || res[0].Duplicate {
		b.Errorf("ingest: %v %v", res, err)
	}
}

func benchClaim(b *testing.B, newStore NewStoreFunc, parallel bool) {
	s := newStore(b)
	ids := idgen.New(nil)
	ctx := b.Context()
	// Store enough QUEUED jobs up front, outside the timer.
	const chunk = 500
	var jobs []*dispatch.Job
	n := max(b.N, 1)
	for len(jobs) < n {
		batch := make([]*dispatch.Job, 0, chunk)
		for range min(chunk, n-len(jobs)) {
			item := benchEvent(ids)
			batch = append(batch, item.Jobs[0])
		}
		require.NoError(b, s.JobInsertMany(ctx, &dispatch.JobInsertManyParams{Jobs: batch}))
		jobs = append(jobs, batch...)
	}
	claim := func(id string) {
		j, err := s.JobGetByID(ctx, id)
		if err != nil {
			b.Errorf("get job: %v", err)
			return
		}
		now := time.Now()
		if err := j.Transition(dispatch.StatusInProgress, now); err != nil {
			b.Errorf("transition: %v", err)
			return
		}
		lease := now.Add(time.Minute)
		j.Worker, j.LeaseExpiresAt = "bench", &lease
		if err := s.JobUpdate(ctx, &dispatch.JobUpdateParams{
			Job: j, Events: []stream.Event{j.StatusEvent(ids.New(), stream.TypeDispatchStarted, now)},
		}); err != nil {
			b.Errorf("claim job: %v", err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	if !parallel {
		for i := range b.N {
			claim(jobs[i].ID)
		}
		return
	}
	var next atomic.Int64
	b.SetParallelism(benchParallelism)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			claim(jobs[next.Add(1)-1].ID)
		}
	})
}
