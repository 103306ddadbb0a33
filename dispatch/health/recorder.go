package health

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"
)

// Recorder defaults.
const (
	// FlushIntervalDefault is how often a Recorder writes its sums.
	FlushIntervalDefault = 2 * time.Second
	// flushTimeout bounds the final flush when the Recorder stops.
	flushTimeout = 5 * time.Second
	// pendingMax bounds the buckets kept for a store that keeps failing
	// (about 5 MB): sums that would pass it are dropped, with a warning.
	pendingMax = 20000
)

// RecorderConfig configures a Recorder.
type RecorderConfig struct {
	// Store receives the sums. Required.
	Store Store
	// FlushInterval is how often the sums are written. Default
	// FlushIntervalDefault.
	FlushInterval time.Duration
	Logger        *slog.Logger
}

// Observation is one attempt as the Recorder counts it.
type Observation struct {
	SubscriptionID string
	// At is when the attempt ended.
	At time.Time
	// OK is true for a success.
	OK bool
	// Answered is true when the attempt got an answer (a status code);
	// only then does Latency count.
	Answered bool
	Latency  time.Duration
	// Error is a failure's message.
	Error string
}

// Recorder adds attempts up in memory, per subscription and minute, and
// writes the sums to the store every FlushInterval (see the package doc).
// Observe never blocks on the store. It is safe for concurrent use.
type Recorder struct {
	cfg    RecorderConfig
	bounds []int64

	// flushMu serializes flushes, so sums taken out are written before the
	// next flush takes more (a failed write puts them back).
	flushMu sync.Mutex
	mu      sync.Mutex
	buckets map[bucketKey]*Bucket
	lasts   map[string]*Last
}

type bucketKey struct {
	subscriptionID string
	start          int64 // unix minutes
}

// NewRecorder returns a Recorder.
func NewRecorder(cfg RecorderConfig) *Recorder {
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = FlushIntervalDefault
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Logger = cfg.Logger.With("component", "health")
	return &Recorder{
		cfg: cfg, bounds: Bounds(),
		buckets: make(map[bucketKey]*Bucket), lasts: make(map[string]*Last),
	}
}

// Observe counts one attempt.
func (r *Recorder) Observe(o Observation) {
	at := o.At.UTC().Truncate(time.Millisecond)
	start := at.Truncate(time.Minute)
	key := bucketKey{subscriptionID: o.SubscriptionID, start: start.Unix() / 60}
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.buckets[key]
	if b == nil {
		b = &Bucket{SubscriptionID: o.SubscriptionID, Start: start, Latency: make([]int64, len(r.bounds)+1)}
		r.buckets[key] = b
	}
	b.Attempts++
	if o.OK {
		b.Succeeded++
	} else {
		b.Failed++
	}
	if o.Answered {
		b.Answered++
		b.Latency[bucketOf(r.bounds, o.Latency.Milliseconds())]++
	}
	l := r.lasts[o.SubscriptionID]
	if l == nil {
		l = &Last{SubscriptionID: o.SubscriptionID}
		r.lasts[o.SubscriptionID] = l
	}
	if o.OK {
		l.merge(&Last{LastSuccessAt: &at})
	} else {
		l.merge(&Last{LastFailureAt: &at, LastError: o.Error})
	}
}

// Flush writes the sums observed since the last flush. When the write
// fails they are kept and added to the next one.
func (r *Recorder) Flush(ctx context.Context) error {
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	r.mu.Lock()
	buckets, lasts := r.buckets, r.lasts
	r.buckets, r.lasts = make(map[bucketKey]*Bucket), make(map[string]*Last)
	r.mu.Unlock()
	if len(buckets) == 0 && len(lasts) == 0 {
		return nil
	}
	p := &RecordParams{}
	for _, k := range slices.SortedFunc(maps.Keys(buckets), func(a, b bucketKey) int {
		if a.subscriptionID != b.subscriptionID {
			if a.subscriptionID < b.subscriptionID {
				return -1
			}
			return 1
		}
		return int(a.start - b.start)
	}) {
		p.Buckets = append(p.Buckets, *buckets[k])
	}
	for _, id := range slices.Sorted(maps.Keys(lasts)) {
		p.Lasts = append(p.Lasts, *lasts[id])
	}
	if err := r.cfg.Store.HealthRecord(ctx, p); err != nil {
		r.putBack(buckets, lasts)
		return err
	}
	return nil
}

// putBack returns sums that could not be written to the maps, unless that
// would keep more than pendingMax buckets.
func (r *Recorder) putBack(buckets map[bucketKey]*Bucket, lasts map[string]*Last) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buckets)+len(buckets) > pendingMax {
		r.cfg.Logger.Warn("health sums dropped: the store refused them too long", "buckets", len(buckets))
		return
	}
	for k, b := range buckets {
		if cur := r.buckets[k]; cur != nil {
			cur.add(b)
		} else {
			r.buckets[k] = b
		}
	}
	for id, l := range lasts {
		if cur := r.lasts[id]; cur != nil {
			l.merge(cur)
		}
		r.lasts[id] = l
	}
}

// Run flushes every FlushInterval until ctx ends, then flushes once more
// and returns nil.
func (r *Recorder) Run(ctx context.Context) error {
	t := time.NewTicker(r.cfg.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
			defer cancel()
			if err := r.Flush(fctx); err != nil {
				r.cfg.Logger.WarnContext(fctx, "final health flush failed", "error", err)
			}
			return nil
		case <-t.C:
			if err := r.Flush(ctx); err != nil && ctx.Err() == nil {
				r.cfg.Logger.WarnContext(ctx, "health flush failed", "error", err)
			}
		}
	}
}
