package queuetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/hooklane/hooklane/queue"
)

// benchChunk is how many iterations share one untimed setup step (making
// DedupIDs, filling or draining the queue), so setup stays out of the timing
// and the queue never grows past a bounded size.
const benchChunk = 1000

// benchBodySize is the body size of benchmark messages, a typical job
// reference with some headroom.
const benchBodySize = 512

// Benchmark runs the shared queue benchmarks as sub-benchmarks of b.
// newQueue returns a fresh, empty queue, as for Run; an adapter with a long
// dedup window may configure a short one so remembered DedupIDs do not grow
// with b.N.
func Benchmark(b *testing.B, newQueue func(b *testing.B) queue.Queue) {
	b.Run("SendBatch10", func(b *testing.B) { benchSendBatch(b, newQueue(b)) })
	b.Run("ReceiveDelete10", func(b *testing.B) { benchReceiveDelete(b, newQueue(b)) })
}

// benchSendBatch measures one SendBatch of queue.MaxBatch messages, one per
// group.
func benchSendBatch(b *testing.B, q queue.Queue) {
	ctx := b.Context()
	body := make([]byte, benchBodySize)
	batch := make([]queue.OutMessage, queue.MaxBatch)
	for k := range batch {
		batch[k] = queue.OutMessage{Group: fmt.Sprintf("g%d", k), Body: body}
	}
	ids := make([]string, benchChunk*queue.MaxBatch)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i%benchChunk == 0 {
			b.StopTimer()
			if i > 0 {
				benchDrain(b, q, benchChunk*queue.MaxBatch)
			}
			for j := range ids {
				ids[j] = fmt.Sprintf("%d-%d", i, j)
			}
			b.StartTimer()
		}
		for k := range batch {
			batch[k].DedupID = ids[(i%benchChunk)*queue.MaxBatch+k]
		}
		res, err := q.SendBatch(ctx, batch)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
}

// benchReceiveDelete measures one Receive of up to queue.MaxBatch messages
// (one per group) plus a Delete of each.
func benchReceiveDelete(b *testing.B, q queue.Queue) {
	ctx := b.Context()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i%benchChunk == 0 {
			b.StopTimer()
			benchFill(b, q, i, min(b.N-i, benchChunk))
			b.StartTimer()
		}
		msgs := benchReceive(b, q)
		for _, m := range msgs {
			if err := q.Delete(ctx, m.ReceiptHandle); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// benchReceive receives up to queue.MaxBatch messages from a queue just
// filled. A receive may come back empty when the server is slow to show
// what it accepted (a local SQS server on a loaded CI machine did, within
// the 1 s wait): it asks again for up to a minute before failing.
func benchReceive(b *testing.B, q queue.Queue) []queue.Message {
	b.Helper()
	end := time.Now().Add(time.Minute)
	for {
		msgs, err := q.Receive(b.Context(), queue.ReceiveParams{Max: queue.MaxBatch, Wait: time.Second, Visibility: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		if len(msgs) > 0 {
			return msgs
		}
		if time.Now().After(end) {
			b.Fatal("no message received for a minute after the queue was filled")
		}
	}
}

// benchFill sends perGroup messages to each of queue.MaxBatch groups.
func benchFill(b *testing.B, q queue.Queue, iteration, perGroup int) {
	b.Helper()
	body := make([]byte, benchBodySize)
	batch := make([]queue.OutMessage, queue.MaxBatch)
	for j := range perGroup {
		for k := range batch {
			batch[k] = queue.OutMessage{Group: fmt.Sprintf("g%d", k), DedupID: fmt.Sprintf("%d-%d-%d", iteration, j, k), Body: body}
		}
		res, err := q.SendBatch(b.Context(), batch)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
}

// benchDrain receives and deletes n messages.
func benchDrain(b *testing.B, q queue.Queue, n int) {
	b.Helper()
	for n > 0 {
		msgs := benchReceive(b, q)
		for _, m := range msgs {
			if err := q.Delete(b.Context(), m.ReceiptHandle); err != nil {
				b.Fatal(err)
			}
		}
		n -= len(msgs)
	}
}
