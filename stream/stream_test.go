package stream

import (
	"context"
	"runtime"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// memStore is an in-memory Reader whose commits the test controls, to
// reproduce an event with a lower id becoming visible after a higher one.
type memStore struct {
	mu     sync.Mutex
	events []Event
	reads  int
}

func (s *memStore) commit(events ...Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, events...)
	sort.Slice(s.events, func(i, j int) bool { return s.events[i].ID < s.events[j].ID })
}

func (s *memStore) StatusEventListAfter(_ context.Context, p *ListAfterParams) ([]Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	var out []Event
	for _, e := range s.events {
		if e.ID > p.AfterID && !e.Time.Before(p.Since) && len(out) < p.Limit {
			out = append(out, e)
		}
	}
	return out, nil
}

// idAt returns a ULID whose time is at, with seq as entropy for ordering
// within the millisecond.
func idAt(at time.Time, seq byte) string {
	var id ulid.ULID
	_ = id.SetTime(ulid.Timestamp(at))
	id[15] = seq
	return id.String()
}

func ev(at time.Time, seq byte, typ, subject string) Event {
	return Event{ID: idAt(at, seq), Type: typ, Time: at, Subject: subject}
}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

type testBundle struct {
	store  *memStore
	hub    *Hub
	clock  *clock
	tailer *Tailer
	t0     time.Time
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	b := &testBundle{store: &memStore{}, hub: NewHub(HubConfig{Buffer: 100}), clock: &clock{t: t0}, t0: t0}
	b.tailer = NewTailer(TailerConfig{
		Store: b.store, Hub: b.hub, Settle: 500 * time.Millisecond, Lookback: 2 * time.Second,
		BatchSize: 3, NowFunc: b.clock.now,
	})
	t.Cleanup(b.hub.Close)
	// A listener that wants nothing: the tailer reads only while a client
	// is connected (TestTailerIdleSkipsToNow covers the other case).
	_, cancel := b.hub.Subscribe(func(*Event) bool { return false })
	t.Cleanup(cancel)
	return b
}

func drain(ch <-chan *Event) []string {
	var ids []string
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				return ids
			}
			ids = append(ids, e.ID)
		default:
			return ids
		}
	}
}

func TestTailerHoldsUntilSettledAndPublishesInIDOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch, cancel := b.hub.Subscribe(nil)
	defer cancel()

	// a (t0+100ms) commits late: after b (t0+200ms) was already visible.
	a := ev(b.t0.Add(100*time.Millisecond), 1, TypeDispatchStarted, "job-1")
	bb := ev(b.t0.Add(200*time.Millisecond), 1, TypeDispatchCompleted, "job-1")
	b.store.commit(bb)
	b.clock.add(300 * time.Millisecond)
	next, err := b.tailer.runOnce(t.Context())
	require.NoError(t, err)
	require.Empty(t, drain(ch), "b is within the settle delay: held")
	require.Equal(t, PollIntervalDefault, next, "the next poll comes before b settles")
	b.clock.add(300 * time.Millisecond)
	next, err = b.tailer.runOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, 100*time.Millisecond+time.Millisecond, next, "wakes when b settles, before the next poll")

	b.store.commit(a)
	b.clock.add(next)
	_, err = b.tailer.runOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{a.ID, bb.ID}, drain(ch), "published in id order: started before completed")
	require.Equal(t, bb.ID, b.hub.Frontier())

	// Re-reading the lookback window publishes nothing twice.
	b.clock.add(time.Second)
	_, err = b.tailer.runOnce(t.Context())
	require.NoError(t, err)
	require.Empty(t, drain(ch))
}

func TestTailerPublishesEventsLaterThanSettleWithinLookback(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch, cancel := b.hub.Subscribe(nil)
	defer cancel()

	first := ev(b.t0.Add(100*time.Millisecond), 1, TypeDispatchQueued, "job-1")
	second := ev(b.t0.Add(300*time.Millisecond), 1, TypeDispatchQueued, "job-2")
	b.store.commit(second)
	b.clock.add(time.Second)
	_, err := b.tailer.runOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{second.ID}, drain(ch))

	// first breaks the settle assumption (committed 1.9 s after its id) but
	// is within the 2 s lookback, re-read once per second: still
	// delivered, late.
	b.clock.add(time.Second)
	b.store.commit(first)
	_, err = b.tailer.runOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{first.ID}, drain(ch))
	require.Equal(t, second.ID, b.hub.Frontier(), "the frontier does not move back")
}

func TestTailerSkipsHistoryAndPagesThroughBacklog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch, cancel := b.hub.Subscribe(nil)
	defer cancel()

	old := ev(b.t0.Add(-time.Second), 1, TypeEventAccepted, "ev-0")
	var want []string
	for i := range 10 {
		e := ev(b.t0.Add(time.Duration(i)*time.Millisecond), byte(i), TypeDispatchCreated, "job")
		b.store.commit(e)
		want = append(want, e.ID)
	}
	b.store.commit(old)
	b.clock.add(time.Second)
	_, err := b.tailer.runOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, want, drain(ch), "all ten across pages of 3; the event from before the start is history")
}

// TestTailerRunWakesOnNotify: a Notify makes the tailer read at once, and
// the held event goes out when it settles, long before the next poll.
func TestTailerRunWakesOnNotify(t *testing.T) {
	t.Parallel()
	store := &memStore{}
	hub := NewHub(HubConfig{})
	defer hub.Close()
	// A poll interval far beyond the test's bound: only Notify and the
	// settle timer can deliver in time.
	tl := NewTailer(TailerConfig{Store: store, Hub: hub, PollInterval: time.Hour, Settle: 20 * time.Millisecond})
	ch, cancel := hub.Subscribe(nil)
	defer cancel()
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- tl.Run(ctx) }()
	defer func() { stop(); require.NoError(t, <-done) }()

	e := Event{ID: idAt(time.Now(), 1), Type: TypeDispatchQueued, Time: time.Now(), Subject: "job-1"}
	store.commit(e)
	hub.Notify()
	select {
	case got := <-ch:
		require.Equal(t, e.ID, got.ID)
	case <-time.After(60 * time.Second):
		t.Fatal("notified event not published")
	}
}

func TestHubDropsSlowClientWithoutBlocking(t *testing.T) {
	t.Parallel()
	hub := NewHub(HubConfig{Buffer: 2})
	defer hub.Close()
	slow, cancelSlow := hub.Subscribe(nil)
	defer cancelSlow()
	fast, cancelFast := hub.Subscribe(func(e *Event) bool { return e.Subject == "keep" })
	defer cancelFast()

	for i := range 5 {
		hub.Publish([]*Event{{ID: idAt(time.Now(), byte(i)), Subject: "other"}})
	}
	require.Len(t, drain(slow), 2, "the buffer, then closed")
	_, ok := <-slow
	require.False(t, ok, "the slow client's channel is closed")
	require.Empty(t, drain(fast), "filtered events do not fill a client's buffer")
	require.Equal(t, 1, hub.Clients())
	cancelSlow() // idempotent after the drop
}

func TestHubMemoryWithThousandIdleClients(t *testing.T) {
	t.Parallel()
	hub := NewHub(HubConfig{})
	defer hub.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cancels := make([]func(), 1000)
	for i := range cancels {
		_, cancels[i] = hub.Subscribe(nil)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc) //nolint:gosec // G115: a heap is far below 2^63 bytes
	t.Logf("1000 idle clients: %d bytes of heap", grown)
	// 1024 pointers per client are 8 KiB: 1000 clients stay below 16 MiB
	// (other tests running in parallel add noise, hence the margin).
	require.Less(t, grown, int64(16<<20))
	for _, c := range cancels {
		c()
	}
	require.Zero(t, hub.Clients())
}

func TestTailerIdleSkipsToNow(t *testing.T) {
	t.Parallel()
	store := &memStore{}
	hub := NewHub(HubConfig{})
	defer hub.Close()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := &clock{t: t0}
	tl := NewTailer(TailerConfig{Store: store, Hub: hub, Settle: 500 * time.Millisecond, NowFunc: clk.now})

	idle := ev(t0.Add(100*time.Millisecond), 1, TypeDispatchQueued, "job-1")
	store.commit(idle)
	clk.add(2 * time.Second)
	_, err := tl.runOnce(t.Context())
	require.NoError(t, err)
	require.Zero(t, store.reads, "no client: no read")
	require.Equal(t, FloorID(t0.Add(1500*time.Millisecond)), hub.Frontier(), "the frontier moved to now minus settle")

	ch, cancel := hub.Subscribe(nil)
	defer cancel()
	fresh := ev(t0.Add(1600*time.Millisecond), 1, TypeDispatchStarted, "job-1")
	store.commit(fresh)
	clk.add(time.Second)
	_, err = tl.runOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{fresh.ID}, drain(ch), "what was written while nobody listened is history, not live")
}

func TestReplaySeamUpToFrontier(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var all []Event
	for i := range 6 {
		e := ev(b.t0.Add(time.Duration(i)*time.Millisecond), byte(i), TypeDispatchQueued, "job")
		all = append(all, e)
	}
	b.store.commit(all[:4]...)
	b.clock.add(time.Second)
	_, err := b.tailer.runOnce(t.Context())
	require.NoError(t, err)

	feed := b.hub.Follow(nil)
	defer feed.Close()
	require.Equal(t, all[3].ID, feed.Frontier())
	b.store.commit(all[4:]...)
	b.clock.add(time.Second)
	_, err = b.tailer.runOnce(t.Context())
	require.NoError(t, err)

	var got []string
	err = feed.Replay(t.Context(), b.store, Cursor{AfterID: all[0].ID}, nil, func(e *Event) error {
		got = append(got, e.ID)
		return nil
	})
	require.NoError(t, err)
	for e := range slices.Values(drain(feed.C)) {
		if feed.Live(&Event{ID: e}) {
			got = append(got, e)
		}
	}
	want := []string{all[1].ID, all[2].ID, all[3].ID, all[4].ID, all[5].ID}
	require.Equal(t, want, got, "replay up to the frontier, then live above it: no gap, no duplicate")
}

func TestCursorGap(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		c    Cursor
		gap  bool
	}{
		{"live", Cursor{}, false},
		{"since inside", Cursor{Since: now.Add(-59 * time.Minute)}, false},
		{"since before", Cursor{Since: now.Add(-61 * time.Minute)}, true},
		{"id inside", Cursor{AfterID: idAt(now.Add(-time.Minute), 0)}, false},
		{"id before wins over since", Cursor{AfterID: idAt(now.Add(-2*time.Hour), 0), Since: now}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g, ok := tt.c.Gap(now, time.Hour)
			require.Equal(t, tt.gap, ok)
			if ok {
				require.Equal(t, TypeGap, g.Type)
				ce, err := g.CloudEvent()
				require.NoError(t, err)
				require.Contains(t, string(ce), `"type":"stream.gap"`)
			}
		})
	}
}
