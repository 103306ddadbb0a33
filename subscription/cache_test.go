package subscription

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/store"
)

// fakeStore is an in-test CacheStore: a list and a generation that grows on
// every change, as the real stores keep it.
type fakeStore struct {
	mu    sync.Mutex
	subs  []*Subscription
	gen   int64
	err   error
	lists int
	gets  int
	// listHookFunc, when set, runs inside SubscriptionListAll after the
	// list was read.
	listHookFunc func()
}

func (f *fakeStore) SubscriptionListAll(context.Context) ([]*Subscription, error) {
	f.mu.Lock()
	out, err, hook := append([]*Subscription(nil), f.subs...), f.err, f.listHookFunc
	f.lists++
	f.mu.Unlock()
	if hook != nil {
		hook()
	}
	return out, err
}

func (f *fakeStore) SubscriptionGetByID(_ context.Context, id string) (*Subscription, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	for _, s := range f.subs {
		if s.ID == id {
			return s, nil
		}
	}
	return nil, store.ErrNotFound
}

func (f *fakeStore) SubscriptionGeneration(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gen, f.err
}

// set replaces the subscriptions, as a change on any instance would.
func (f *fakeStore) set(subs ...*Subscription) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs = subs
	f.gen++
}

func (f *fakeStore) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func (f *fakeStore) listCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists
}

type testBundle struct {
	store *fakeStore
	cache *Cache
	now   time.Time
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	b := &testBundle{store: &fakeStore{gen: 1}, now: time.Date(2026, 1, 24, 14, 0, 0, 0, time.UTC)}
	b.cache = NewCache(CacheConfig{
		Store:   b.store,
		Logger:  slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
		NowFunc: func() time.Time { return b.now },
	})
	t.Cleanup(b.cache.Close)
	return b
}

// tWriter sends log lines to t.Log.
type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// matchCodes returns the codes of the subscriptions an order:created event matches.
func matchCodes(t *testing.T, c *Cache) []string {
	t.Helper()
	got, err := c.Match(t.Context(), testEvent("order:created"), "")
	require.NoError(t, err)
	return codes(got)
}

func TestCacheInvalidateAppliesImmediately(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := testSub("a", 1, "order:created")
	b.store.set(a)
	require.Equal(t, []string{"a"}, matchCodes(t, b.cache))

	// A change stored without Invalidate is not seen until a poll...
	b.store.set(a, testSub("b", 2, "order:*"))
	require.Equal(t, []string{"a"}, matchCodes(t, b.cache))

	// ...and with Invalidate, the very next Match sees it.
	b.cache.Invalidate()
	require.Equal(t, []string{"a", "b"}, matchCodes(t, b.cache))

	paused := testSub("a", 1, "order:created")
	paused.Status = StatusPaused
	b.store.set(paused, testSub("b", 2, "order:*"))
	b.cache.Invalidate()
	require.Equal(t, []string{"b"}, matchCodes(t, b.cache))

	b.store.set()
	b.cache.Invalidate()
	require.Empty(t, matchCodes(t, b.cache))
	require.Equal(t, uint64(4), b.cache.Stats().Rebuilds)
}

func TestCacheGenerationPolling(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	b.store.set(testSub("a", 1, "order:created"))
	require.NoError(t, b.cache.runOnce(ctx))
	require.Equal(t, uint64(1), b.cache.Stats().Rebuilds)

	// Nothing changed: no rebuild, no list.
	lists := b.store.listCount()
	require.NoError(t, b.cache.runOnce(ctx))
	require.Equal(t, lists, b.store.listCount())
	require.Equal(t, uint64(1), b.cache.Stats().Rebuilds)
	require.Equal(t, []string{"a"}, matchCodes(t, b.cache))

	// Another instance changes a subscription: the poll picks it up.
	b.store.set(testSub("a", 1, "order:created"), testSub("c", 0, "order:created"))
	require.NoError(t, b.cache.runOnce(ctx))
	require.Equal(t, []string{"c", "a"}, matchCodes(t, b.cache))
	st := b.cache.Stats()
	require.Equal(t, uint64(2), st.Rebuilds)
	require.Equal(t, int64(3), st.StoreGeneration)
	require.Equal(t, 2, st.Subscriptions)
	require.Equal(t, b.now, st.BuiltAt)
}

func TestCacheRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cache.interval = time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	polled := make(chan struct{})
	b.cache.afterRefreshFunc = func() {
		select {
		case polled <- struct{}{}:
		case <-ctx.Done():
		}
	}
	b.store.set(testSub("a", 1, "order:created"))
	done := make(chan error, 1)
	go func() { done <- b.cache.Run(ctx) }()

	<-polled
	require.Equal(t, []string{"a"}, matchCodes(t, b.cache))
	b.store.set(testSub("b", 1, "order:created"))
	// The second poll after the change started after it.
	<-polled
	<-polled
	require.Equal(t, []string{"b"}, matchCodes(t, b.cache))

	cancel()
	require.NoError(t, <-done)
}

// TestCacheStaleBuildCannotWin holds a poll's build after it read the store,
// makes and invalidates a change meanwhile, and checks that the older build
// does not count as fresh.
func TestCacheStaleBuildCannotWin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	b.store.set(testSub("a", 1, "order:created"))
	require.Equal(t, []string{"a"}, matchCodes(t, b.cache))

	entered, release := make(chan struct{}), make(chan struct{})
	b.store.mu.Lock()
	b.store.listHookFunc = func() {
		close(entered)
		<-release
	}
	b.store.mu.Unlock()
	b.store.set(testSub("a", 1, "order:created"), testSub("b", 2, "order:created"))

	pollDone := make(chan error, 1)
	go func() { pollDone <- b.cache.runOnce(ctx) }()
	<-entered // the poll has read [a, b] and is held
	b.store.mu.Lock()
	b.store.listHookFunc = nil
	b.store.mu.Unlock()

	b.store.set(testSub("a", 1, "order:created"), testSub("b", 2, "order:created"), testSub("c", 3, "order:created"))
	b.cache.Invalidate()
	matched := make(chan []string, 1)
	go func() {
		got, err := b.cache.Match(ctx, testEvent("order:created"), "")
		if err != nil {
			matched <- []string{err.Error()}
			return
		}
		matched <- codes(got)
	}()
	close(release)
	require.NoError(t, <-pollDone)
	require.Equal(t, []string{"a", "b", "c"}, <-matched)
	require.Equal(t, []string{"a", "b", "c"}, matchCodes(t, b.cache))
}

func TestCacheStoreErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	boom := errors.New("boom")

	b.store.fail(boom)
	_, err := b.cache.Match(ctx, testEvent("order:created"), "")
	require.ErrorIs(t, err, boom)
	_, err = b.cache.Index(ctx)
	require.ErrorIs(t, err, boom)

	b.store.fail(nil)
	b.store.set(testSub("a", 1, "order:created"))
	require.Equal(t, []string{"a"}, matchCodes(t, b.cache))

	// A failed poll keeps the index in use.
	b.store.fail(boom)
	require.ErrorIs(t, b.cache.runOnce(ctx), boom)
	require.Equal(t, []string{"a"}, matchCodes(t, b.cache))

	// After Invalidate, a stale answer would be wrong: Match fails.
	b.cache.Invalidate()
	_, err = b.cache.Match(ctx, testEvent("order:created"), "")
	require.ErrorIs(t, err, boom)

	b.store.fail(nil)
	require.Equal(t, []string{"a"}, matchCodes(t, b.cache))
}

func TestCacheHitsAndMisses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.store.set(testSub("a", 1, "order:created"), testSub("b", 2, "order:*"))

	require.Equal(t, []string{"a", "b"}, matchCodes(t, b.cache))
	b.cache.lists.Wait() // ristretto applies sets asynchronously
	require.Equal(t, []string{"a", "b"}, matchCodes(t, b.cache))
	st := b.cache.Stats()
	require.Equal(t, uint64(1), st.Hits)
	require.Equal(t, uint64(1), st.Misses)

	// A rebuild makes the cached lists unusable.
	b.store.set(testSub("b", 2, "order:*"))
	b.cache.Invalidate()
	require.Equal(t, []string{"b"}, matchCodes(t, b.cache))
	require.Equal(t, uint64(2), b.cache.Stats().Misses)

	// Even a list of an older build that is still (or again) in the
	// ristretto cache is not served.
	snap := b.cache.cur.Load()
	b.cache.lists.Wait()
	b.cache.lists.Set("order:created", &candidateList{build: snap.build - 1}, 1)
	b.cache.lists.Wait()
	require.Equal(t, []string{"b"}, matchCodes(t, b.cache))
	require.Equal(t, uint64(3), b.cache.Stats().Misses)
}

func TestCacheIndex(t *testing.T) {
	t.Parallel()
	b := setup(t)
	paused := testSub("p", 1, "invoice:*")
	paused.Status = StatusPaused
	b.store.set(paused)
	ix, err := b.cache.Index(t.Context())
	require.NoError(t, err)
	require.True(t, ix.BindsEventType("invoice:paid"))
	require.False(t, ix.BindsEventType("order:created"))
	got, ok := ix.ByID("id-p")
	require.True(t, ok)
	require.Equal(t, "p", got.Code)
}

// TestCacheConcurrent matches from several goroutines while changes are
// invalidated, for the race detector, and checks each answer is one of the
// states the store went through.
func TestCacheConcurrent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.store.set(testSub("a", 1, "order:created"))
	ctx := t.Context()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			for range 200 {
				got, err := b.cache.Match(ctx, testEvent("order:created"), "")
				if err != nil {
					errs <- err
					return
				}
				if len(got) != 1 || (got[0].Code != "a" && got[0].Code != "b") {
					errs <- errors.New("unexpected match " + fmtCodes(got))
					return
				}
			}
		})
	}
	for i := range 50 {
		code := "a"
		if i%2 == 1 {
			code = "b"
		}
		b.store.set(testSub(code, 1, "order:created"))
		b.cache.Invalidate()
		require.NoError(t, b.cache.runOnce(ctx))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, []string{"b"}, matchCodes(t, b.cache))
}

func fmtCodes(subs []*Subscription) string {
	s := ""
	var sSb338 strings.Builder
	for _, x := range codes(subs) {
		sSb338.WriteString(x + ",")
	}
	s += sSb338.String()
	return s
}

func TestNewCachePanicsWithoutStore(t *testing.T) {
	t.Parallel()
	require.Panics(t, func() { NewCache(CacheConfig{}) })
}

// TestCacheGet: Get serves a subscription from the index without a store
// read; one the index does not hold yet (made elsewhere since the last
// refresh) is read from the store, and one that is gone is ErrNotFound; a
// local change is seen after Invalidate.
func TestCacheGet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := &Subscription{ID: "A", Code: "a", Status: StatusActive, EventTypes: []Binding{{EventTypeCode: "x.y"}}}
	fs := &fakeStore{}
	fs.set(a)
	c := NewCache(CacheConfig{Store: fs})
	t.Cleanup(c.Close)

	got, err := c.Get(ctx, "A")
	require.NoError(t, err)
	require.Equal(t, "a", got.Code)
	got, err = c.Get(ctx, "A")
	require.NoError(t, err)
	require.Same(t, a, got)
	fs.mu.Lock()
	require.Zero(t, fs.gets, "an indexed subscription needs no store read")
	fs.mu.Unlock()

	b := &Subscription{ID: "B", Code: "b", Status: StatusActive, EventTypes: []Binding{{EventTypeCode: "x.y"}}}
	fs.set(a, b) // another instance's change, not yet refreshed here
	got, err = c.Get(ctx, "B")
	require.NoError(t, err)
	require.Equal(t, "b", got.Code)
	_, err = c.Get(ctx, "C")
	require.ErrorIs(t, err, store.ErrNotFound)

	paused := *a
	paused.Status = StatusPaused
	fs.set(&paused, b)
	c.Invalidate()
	got, err = c.Get(ctx, "A")
	require.NoError(t, err)
	require.Equal(t, StatusPaused, got.Status, "a local change is seen after Invalidate")
}
