// Package health keeps the rolling aggregates of every subscription's
// delivery attempts and turns them into the health view of API.md §12
// (GET /api/subscriptions/{id}/health): attempts, successes, failures,
// success rate and latency percentiles over the last hour and day, and the
// last success and failure.
//
// # Aggregates
//
// Attempts are counted per subscription and per minute (a Bucket): counts
// of attempts, successes, failures, attempts that got an answer, and a
// fixed latency histogram of those (Bounds). Each instance adds its
// attempts up in memory (Recorder) and flushes the sums to the store every
// few seconds, where they add up with the other instances'; the last
// success and failure of each subscription are merged the same way (the
// later time wins). A health request reads at most 24 × 60 buckets of one
// subscription, never the attempts themselves; buckets older than a day
// are deleted by a poller.
//
// # Precision
//
//   - The view lags the attempts by at most the flush interval (2 s by
//     default), plus, for attempts of a process that died, what it had not
//     flushed yet (they are then missing from the counts; the jobs
//     themselves are unaffected).
//   - A window is whole minutes: "1h" is the current minute and the 59
//     before it, so it covers between 59 and 60 minutes.
//   - A percentile is estimated from the histogram by linear interpolation
//     inside the bucket that holds it: the true value lies within that
//     bucket's bounds (Bounds: 1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100,
//     … ms, each about 1.5 to 2 times the one before), and above the last
//     bound (300 s) it is reported as that bound.
package health

import (
	"context"
	"math"
	"sort"
	"time"
)

// Bounds returns the upper bounds, in milliseconds, of the latency
// histogram's buckets: bucket i counts latencies in (Bounds[i-1],
// Bounds[i]]; a last bucket, beyond the list, counts those above the last
// bound. The list is part of the stored format: change it only with a
// migration of the stored buckets.
func Bounds() []int64 {
	return []int64{
		1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100, 150, 200, 300, 500, 700,
		1000, 1500, 2000, 3000, 5000, 7000, 10000, 15000, 20000, 30000, 60000, 120000, 300000,
	}
}

// Buckets is the number of latency counters of a Bucket: one per bound and
// one above the last.
func Buckets() int { return len(Bounds()) + 1 }

// bucketOf returns the histogram index of a latency of ms milliseconds.
func bucketOf(bounds []int64, ms int64) int {
	return sort.Search(len(bounds), func(i int) bool { return bounds[i] >= ms })
}

// Bucket is the aggregate of one subscription's attempts in one minute.
type Bucket struct {
	SubscriptionID string
	// Start is the minute's start (UTC, whole minutes).
	Start time.Time
	// Attempts counts every recorded attempt; Succeeded + Failed =
	// Attempts.
	Attempts, Succeeded, Failed int64
	// Answered counts the attempts that got an answer (a status code):
	// those whose latencies the histogram holds.
	Answered int64
	// Latency has Buckets() counters, see Bounds.
	Latency []int64
}

// add adds o's counts to b.
func (b *Bucket) add(o *Bucket) {
	b.Attempts += o.Attempts
	b.Succeeded += o.Succeeded
	b.Failed += o.Failed
	b.Answered += o.Answered
	if len(b.Latency) < len(o.Latency) {
		b.Latency = append(b.Latency, make([]int64, len(o.Latency)-len(b.Latency))...)
	}
	for i, n := range o.Latency {
		b.Latency[i] += n
	}
}

// Last is the latest success and failure of one subscription.
type Last struct {
	SubscriptionID string
	LastSuccessAt  *time.Time
	LastFailureAt  *time.Time
	// LastError is the error of the failure at LastFailureAt.
	LastError string
}

// merge takes what of o is later than l.
func (l *Last) merge(o *Last) {
	if o.LastSuccessAt != nil && (l.LastSuccessAt == nil || o.LastSuccessAt.After(*l.LastSuccessAt)) {
		l.LastSuccessAt = o.LastSuccessAt
	}
	if o.LastFailureAt != nil && (l.LastFailureAt == nil || o.LastFailureAt.After(*l.LastFailureAt)) {
		l.LastFailureAt = o.LastFailureAt
		l.LastError = o.LastError
	}
}

// Store is the storage port of the aggregates. Adapters live in
// store/sqlitestore and store/mongostore and pass store/storetest.
type Store interface {
	// HealthRecord adds each bucket's counts to the stored bucket of the
	// same subscription and minute (creating it), and merges each Last into
	// the stored one of its subscription: a later LastSuccessAt replaces
	// the stored one, a later LastFailureAt replaces it with its LastError.
	// Concurrent calls add up.
	HealthRecord(ctx context.Context, p *RecordParams) error
	// HealthGet returns the Last of a subscription (nil when none is
	// stored) and its buckets whose Start is at or after since, in
	// ascending Start.
	HealthGet(ctx context.Context, subscriptionID string, since time.Time) (*Last, []Bucket, error)
	// HealthDeleteBefore deletes up to p.Limit buckets whose Start is
	// before p.BucketsBefore, and up to p.Limit Lasts whose latest time is
	// before p.LastBefore, and returns how many records it deleted.
	HealthDeleteBefore(ctx context.Context, p *DeleteBeforeParams) (int, error)
}

// RecordParams are the arguments of HealthRecord.
type RecordParams struct {
	Buckets []Bucket
	Lasts   []Last
}

// DeleteBeforeParams are the arguments of HealthDeleteBefore.
type DeleteBeforeParams struct {
	BucketsBefore time.Time
	LastBefore    time.Time
	Limit         int
}

// Window is one window of the health view (API.md §12).
type Window struct {
	Window    string `json:"window"`
	Attempts  int64  `json:"attempts"`
	Succeeded int64  `json:"succeeded"`
	Failed    int64  `json:"failed"`
	// SuccessRate is nil when the window has no attempt.
	SuccessRate *float64 `json:"successRate"`
	// LatencyMs is nil when no attempt of the window got an answer.
	LatencyMs *Percentiles `json:"latencyMs"`
}

// Percentiles are latency percentiles in milliseconds.
type Percentiles struct {
	P50 int64 `json:"p50"`
	P95 int64 `json:"p95"`
	P99 int64 `json:"p99"`
}

// WindowSpan is one window of the view: its name and length.
type WindowSpan struct {
	Name string
	Span time.Duration
}

// Windows returns the windows of the health view: 1h and 24h.
func Windows() []WindowSpan {
	return []WindowSpan{{Name: "1h", Span: time.Hour}, {Name: "24h", Span: 24 * time.Hour}}
}

// Retention is how long buckets are kept: the longest window and a minute.
const Retention = 24*time.Hour + time.Minute

// Since returns the Start of the oldest bucket a window of span covers at
// now: the current minute and the span's other minutes before it.
func Since(now time.Time, span time.Duration) time.Time {
	return now.UTC().Truncate(time.Minute).Add(-span + time.Minute)
}

// Summarize computes the windows of the view at now from a subscription's
// buckets (any order; those too old for a window are left out of it).
func Summarize(buckets []Bucket, now time.Time) []Window {
	out := make([]Window, 0, len(Windows()))
	for _, w := range Windows() {
		since := Since(now, w.Span)
		sum := Bucket{Latency: make([]int64, Buckets())}
		for i := range buckets {
			if !buckets[i].Start.Before(since) {
				sum.add(&buckets[i])
			}
		}
		win := Window{Window: w.Name, Attempts: sum.Attempts, Succeeded: sum.Succeeded, Failed: sum.Failed}
		if sum.Attempts > 0 {
			rate := float64(sum.Succeeded) / float64(sum.Attempts)
			win.SuccessRate = &rate
		}
		if sum.Answered > 0 {
			win.LatencyMs = &Percentiles{
				P50: Percentile(sum.Latency, 0.50), P95: Percentile(sum.Latency, 0.95), P99: Percentile(sum.Latency, 0.99),
			}
		}
		out = append(out, win)
	}
	return out
}

// Percentile estimates the q-quantile (0 < q ≤ 1), in milliseconds, of the
// latencies counted in hist (Buckets() counters, see Bounds), by linear
// interpolation inside the bucket that holds it; 0 for an empty histogram.
func Percentile(hist []int64, q float64) int64 {
	bounds := Bounds()
	var total int64
	for _, n := range hist {
		total += n
	}
	if total == 0 {
		return 0
	}
	rank := q * float64(total) // the rank-th smallest latency, 1-based
	var seen int64
	for i, n := range hist {
		if n == 0 || float64(seen+n) < rank {
			seen += n
			continue
		}
		if i >= len(bounds) {
			return bounds[len(bounds)-1]
		}
		lo := int64(0)
		if i > 0 {
			lo = bounds[i-1]
		}
		frac := (rank - float64(seen)) / float64(n)
		return lo + int64(math.Ceil(frac*float64(bounds[i]-lo)))
	}
	return bounds[len(bounds)-1]
}
