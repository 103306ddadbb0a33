package storespike

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
)

// spikeStore is the write side of a data plane as the spike drives it.
type spikeStore interface {
	// Ingest stores an event with its dedup key, its jobs and their status
	// events in one durable write, unless its dedup key is stored; it
	// sets Version 1 on the jobs it stored.
	Ingest(ctx context.Context, it *dispatch.EventIngestItem) (duplicate bool, err error)
	// Update writes j when the stored version is j.Version, with its
	// status event, in one durable write, and then grows j.Version; a
	// stale version is an error.
	Update(ctx context.Context, j *dispatch.Job, ev stream.Event) error
	Close() error
}

// commitWindow is the gateway's default commit window
// (HOOKLANE_SQLITE_COMMIT_WINDOW), used by both SQLite stores.
const commitWindow = 500 * time.Microsecond

// openers are the three stores of the spike, in the order a round runs
// them.
func openers() []struct {
	name string
	open func(tb testing.TB, dir string) spikeStore
} {
	return []struct {
		name string
		open func(tb testing.TB, dir string) spikeStore
	}{
		{"today", func(tb testing.TB, dir string) spikeStore {
			tb.Helper()
			return openToday(tb, dir)
		}},
		{"reshaped", func(tb testing.TB, dir string) spikeStore {
			tb.Helper()
			return openReshaped(tb, dir)
		}},
		{"pebble", func(tb testing.TB, dir string) spikeStore {
			tb.Helper()
			return openPebble(tb, dir)
		}},
	}
}

// todayStore is today's sqlitestore through its real methods.
type todayStore struct{ st *sqlitestore.Store }

func openToday(tb testing.TB, dir string) *todayStore {
	tb.Helper()
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Config{
		Path: filepath.Join(dir, "hooklane.db"), CommitWindow: commitWindow,
	})
	require.NoError(tb, err)
	return &todayStore{st: st}
}

func (s *todayStore) Ingest(ctx context.Context, it *dispatch.EventIngestItem) (bool, error) {
	res, err := s.st.EventIngest(ctx, &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{*it}})
	if err != nil {
		return false, fmt.Errorf("ingest: %w", err)
	}
	for _, j := range it.Jobs {
		if !res[0].Duplicate {
			j.Version = 1
		}
	}
	return res[0].Duplicate, nil
}

func (s *todayStore) Update(ctx context.Context, j *dispatch.Job, ev stream.Event) error {
	if err := s.st.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: j, Events: []stream.Event{ev}}); err != nil {
		return fmt.Errorf("update: %w", err)
	}
	return nil
}

func (s *todayStore) Close() error { return s.st.Close() }

// pattern builds the writes of delivered events the way the gateway does:
// the event and its job of one subscription (dispatch.NewEventJob), the
// status events of ingest (event.accepted, dispatch.created,
// dispatch.queued), the claim's dispatch.started and the outcome's
// dispatch.completed with its attempt.
type pattern struct {
	ids      *idgen.Generator
	lc       *dispatch.Lifecycle
	settings *dispatch.Settings
	code     string
	seq      atomic.Int64
}

func newPattern() *pattern {
	ids := idgen.New(nil)
	now := time.Now().UTC()
	sub := &subscription.Subscription{
		ID: ids.New(), Code: "orders", EventTypes: []subscription.Binding{{EventTypeCode: "shop.order.created"}},
		Target: "http://127.0.0.1:9/hook", CreatedAt: now, UpdatedAt: now,
	}
	sub.ApplyDefaults()
	return &pattern{
		ids: ids, lc: dispatch.NewLifecycle(dispatch.LifecycleConfig{NewID: ids.New}),
		settings: sub.JobSettings(), code: sub.Code,
	}
}

// item returns the ingest write of a new event.
func (p *pattern) item() (*dispatch.EventIngestItem, *dispatch.Job) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	n := p.seq.Add(1)
	ce := cloudevent.Event{
		SpecVersion: "1.0", ID: fmt.Sprintf("order-%d", n), Source: "/shop/eu-1", Type: "shop.order.created",
		Subject: fmt.Sprintf("orders/%d", n), DataContentType: "application/json", Time: now,
		Data: []byte(`{"orderId":"` + strconv.FormatInt(n, 10) + `","total":{"amount":"129.90","currency":"EUR"},"items":3,"customer":"c-4711"}`),
	}
	ev := &event.Event{ID: p.ids.New(), ReceivedAt: now, DedupKey: ce.Source + "\x00" + ce.ID, Event: ce}
	j := dispatch.NewEventJob(ev, p.settings, now)
	accepted := stream.Event{
		ID: p.ids.New(), Type: stream.TypeEventAccepted, Time: now, Subject: ev.ID,
		Data: stream.Data{EventID: ev.ID, EventType: ce.Type, Subscriptions: []string{p.code}},
	}
	events := append([]stream.Event{accepted}, p.lc.CreationEvents(j, now)...)
	return &dispatch.EventIngestItem{Event: ev, Jobs: []*dispatch.Job{j}, StatusEvents: events}, j
}

// claim moves j to IN_PROGRESS as dispatch.Lifecycle.Claim does and returns
// its status event.
func (p *pattern) claim(j *dispatch.Job) (stream.Event, error) {
	now := time.Now().UTC()
	if err := j.Transition(dispatch.StatusInProgress, now); err != nil {
		return stream.Event{}, fmt.Errorf("claim: %w", err)
	}
	j.AttemptCount++
	j.Worker = "spike:1"
	lease := now.Add(2 * time.Minute)
	j.LeaseExpiresAt = &lease
	ev := j.StatusEvent(p.ids.New(), stream.TypeDispatchStarted, now)
	ev.Data.Worker = j.Worker
	return ev, nil
}

// complete records a successful attempt on j and moves it to COMPLETED as
// dispatch.Lifecycle.RecordOutcome does, and returns its status event.
func (p *pattern) complete(j *dispatch.Job) (stream.Event, error) {
	now := time.Now().UTC()
	a := dispatch.Attempt{
		Attempt: j.AttemptCount, StartedAt: now.Add(-2 * time.Millisecond), DurationMs: 2, StatusCode: 200,
		ResponseBody: `{"ok":true}`, Worker: j.Worker,
	}
	j.Attempts = append(j.Attempts, a)
	if err := j.Transition(dispatch.StatusCompleted, now); err != nil {
		return stream.Event{}, fmt.Errorf("complete: %w", err)
	}
	j.LastError = nil
	ev := j.StatusEvent(p.ids.New(), stream.TypeDispatchCompleted, now)
	ev.Data.StatusCode, ev.Data.DurationMs, ev.Data.Attempt = 200, 2, a.Attempt
	return ev, nil
}

// deliver runs the three durable writes of one delivered event on s.
func (p *pattern) deliver(ctx context.Context, s spikeStore) error {
	it, j := p.item()
	dup, err := s.Ingest(ctx, it)
	if err != nil {
		return err
	}
	if dup {
		return fmt.Errorf("event %s stored as a duplicate", it.Event.ID)
	}
	ev, err := p.claim(j)
	if err != nil {
		return err
	}
	if err := s.Update(ctx, j, ev); err != nil {
		return err
	}
	if ev, err = p.complete(j); err != nil {
		return err
	}
	return s.Update(ctx, j, ev)
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	require.NoError(tb, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDeliveredEvent runs the writes of b.N delivered events (one
// op: ingest, claim, outcome, each durable) from C concurrent writers on
// each store, fsync on: SQLite synchronous=FULL with the gateway's group
// commit and commit window, Pebble's synced WAL commits. Beside ns/op (the
// wall time per event, 1/throughput) it reports events/s and cpu-ns/event,
// the whole process's CPU time (every goroutine: the SQLite writer,
// Pebble's flushes and compactions) per delivered event. The stores run one
// after another inside each C, so one invocation interleaves them; repeat
// invocations rather than -count to interleave rounds.
func BenchmarkDeliveredEvent(b *testing.B) {
	for _, c := range []int{1, 8, 32} {
		for _, o := range openers() {
			b.Run(fmt.Sprintf("c=%d/%s", c, o.name), func(b *testing.B) {
				s := o.open(b, b.TempDir())
				defer func() { require.NoError(b, s.Close()) }()
				p := newPattern()
				ctx := context.Background()
				// Warm up: the files, the caches, the prepared statements.
				for range 50 {
					require.NoError(b, p.deliver(ctx, s))
				}
				var (
					next atomic.Int64
					wg   sync.WaitGroup
					errs = make(chan error, c)
				)
				b.ResetTimer()
				cpu0, t0 := cpuTime(b), time.Now()
				for range c {
					wg.Go(func() {
						for next.Add(1) <= int64(b.N) {
							if err := p.deliver(ctx, s); err != nil {
								errs <- err
								return
							}
						}
					})
				}
				wg.Wait()
				wall, cpu := time.Since(t0), cpuTime(b)-cpu0
				b.StopTimer()
				close(errs)
				for err := range errs {
					require.NoError(b, err)
				}
				b.ReportMetric(float64(b.N)/wall.Seconds(), "events/s")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/event")
			})
		}
	}
}

// TestStoresDeliverConcurrently checks that each store of the spike does
// what the benchmark measures: every delivered event's three writes
// succeed from concurrent writers, a stale version is refused, and a
// duplicate event is not stored twice.
func TestStoresDeliverConcurrently(t *testing.T) {
	t.Parallel()
	for _, o := range openers() {
		t.Run(o.name, func(t *testing.T) {
			t.Parallel()
			s := o.open(t, t.TempDir())
			defer func() { require.NoError(t, s.Close()) }()
			p := newPattern()
			ctx := context.Background()
			var wg sync.WaitGroup
			errs := make(chan error, 8*20)
			for range 8 {
				wg.Go(func() {
					for range 20 {
						errs <- p.deliver(ctx, s)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}

			it, j := p.item()
			dup, err := s.Ingest(ctx, it)
			require.NoError(t, err)
			require.False(t, dup)
			twin, _ := p.item()
			twin.Event.DedupKey = it.Event.DedupKey
			dup, err = s.Ingest(ctx, twin)
			require.NoError(t, err)
			require.True(t, dup, "the second event with the same dedup key was stored")

			ev, err := p.claim(j)
			require.NoError(t, err)
			stale := *j
			require.NoError(t, s.Update(ctx, j, ev))
			require.Error(t, s.Update(ctx, &stale, ev), "a write at a stale version was accepted")
		})
	}
}
