package memqueue_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hooklane/hooklane/queue"
	"github.com/hooklane/hooklane/queue/memqueue"
	"github.com/hooklane/hooklane/queue/queuetest"
)

var _ queue.Queue = (*memqueue.Queue)(nil)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// suiteDedupWindow is short enough for the suite to wait it out.
const suiteDedupWindow = 2 * time.Second

func TestConformance(t *testing.T) {
	t.Parallel()
	queuetest.Run(t, queuetest.Features{
		DedupWindow:           suiteDedupWindow,
		VisibilityGranularity: 250 * time.Millisecond,
		MaxWait:               memqueue.MaxWait,
	}, func(t *testing.T) queue.Queue {
		t.Helper()
		q := memqueue.New(memqueue.Config{DedupWindow: suiteDedupWindow})
		t.Cleanup(func() { _ = q.Close() })
		return q
	})
}

func BenchmarkQueue(b *testing.B) {
	queuetest.Benchmark(b, func(b *testing.B) queue.Queue {
		b.Helper()
		// A short dedup window keeps remembered DedupIDs bounded at any b.N.
		q := memqueue.New(memqueue.Config{DedupWindow: time.Millisecond})
		b.Cleanup(func() { _ = q.Close() })
		return q
	})
}
