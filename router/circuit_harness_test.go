package router_test

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/clocktest"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/dispatch/pollers"
	"github.com/hooklane/hooklane/dispatch/pool"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/queue/memqueue"
	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/router/webhook"
	"github.com/hooklane/hooklane/storage/mongostore"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
)

// circuitStore is what the circuit tests use of a store: both adapters
// implement it.
type circuitStore interface {
	dispatch.LifecycleStore
	dispatch.CircuitStore
	pool.Store
	router.Store
	JobGetMany(ctx context.Context, ids []string) ([]*dispatch.Job, error)
	SubscriptionInsert(ctx context.Context, s *subscription.Subscription) error
	SubscriptionUpdate(ctx context.Context, s *subscription.Subscription) error
	subscription.CacheStore
	EventIngest(ctx context.Context, p *dispatch.EventIngestParams) ([]dispatch.EventIngestResult, error)
	StatusEventListBySubject(ctx context.Context, subject string) ([]stream.Event, error)
}

// circuitStoreKind opens a fresh, empty store of one adapter, closed (and
// for MongoDB dropped) when t ends.
type circuitStoreKind struct {
	name string
	open func(t *testing.T) circuitStore
}

// circuitStores lists the adapters every circuit test runs on: SQLite in a
// temporary file, and MongoDB (FerretDB locally) in a database of its own
// on the test server (HOOKLANE_TEST_MONGO_URI, the local stack's address
// by default).
func circuitStores() []circuitStoreKind {
	return []circuitStoreKind{{"sqlite", openCircuitSQLite}, {"mongo", openCircuitMongo}}
}

func openCircuitSQLite(t *testing.T) circuitStore { //nolint:ireturn // both stores behind one test interface
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Config{Path: filepath.Join(t.TempDir(), "h.db")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	return st
}

func openCircuitMongo(t *testing.T) circuitStore { //nolint:ireturn // both stores behind one test interface
	t.Helper()
	uri := cmp.Or(os.Getenv("HOOKLANE_TEST_MONGO_URI"), "mongodb://127.0.0.1:27017/")
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	db := fmt.Sprintf("hltest_circuit_%d_%s", os.Getpid(), hex.EncodeToString(suffix))
	st, err := mongostore.Open(context.Background(), mongostore.Config{URI: uri, Database: db})
	require.NoError(t, err, "open mongo store at %s (start the local stack: bash localstack/stack.sh start)", uri)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, st.Drop(ctx))
		require.NoError(t, st.Close())
	})
	return st
}

// receiver is a loopback webhook receiver that counts every request and
// answers with the status set; while gate is set, each request waits for
// it to close.
type receiver struct {
	srv    *httptest.Server
	status atomic.Int32
	hits   atomic.Int64

	mu        sync.Mutex
	gate      chan struct{}
	arrived   chan string // job ids of gated requests, as they arrive
	delivered []delivered // the 2xx deliveries, in arrival order
}

// delivered is one successful delivery: the job and the event's data.
type delivered struct {
	jobID string
	group string
	seq   int
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	rx := &receiver{arrived: make(chan string, 100)}
	rx.status.Store(http.StatusServiceUnavailable)
	rx.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rx.hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		rx.mu.Lock()
		gate := rx.gate
		rx.mu.Unlock()
		if gate != nil {
			rx.arrived <- r.Header.Get("webhook-id")
			<-gate
		}
		status := int(rx.status.Load())
		if status < 300 {
			var ce struct {
				Data struct {
					Group string `json:"group"`
					Seq   int    `json:"seq"`
				} `json:"data"`
			}
			_ = json.Unmarshal(body, &ce)
			rx.mu.Lock()
			rx.delivered = append(rx.delivered, delivered{jobID: r.Header.Get("webhook-id"), group: ce.Data.Group, seq: ce.Data.Seq})
			rx.mu.Unlock()
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(rx.srv.Close)
	return rx
}

// hold makes the next requests wait until the returned release is called.
func (rx *receiver) hold() (release func()) {
	gate := make(chan struct{})
	rx.mu.Lock()
	rx.gate = gate
	rx.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			rx.mu.Lock()
			rx.gate = nil
			rx.mu.Unlock()
			close(gate)
		})
	}
}

func (rx *receiver) deliveries() []delivered {
	rx.mu.Lock()
	defer rx.mu.Unlock()
	return append([]delivered(nil), rx.delivered...)
}

// rig is a gateway core with circuit breaking on: one store and queue,
// several instances (each a Lifecycle, a router and a pending poller), an
// injected clock for the lifecycles, and one subscription to a receiver.
type rig struct {
	t     *testing.T
	st    circuitStore
	q     *memqueue.Queue
	clock *clocktest.Clock
	ids   *idgen.Generator
	lcs   []*dispatch.Lifecycle
	rx    *receiver
	sub   *subscription.Subscription
	// caches are the instances' subscription caches.
	caches []*subscription.Cache
	kinds  sync.Map // circuit hook kinds seen, with counts
}

type rigOptions struct {
	instances        int
	mode             dispatch.Mode
	failures         int
	cooldown         time.Duration
	autoDisableAfter time.Duration
	maxAgeSeconds    int
}

func newRig(t *testing.T, st circuitStore, o rigOptions) *rig {
	t.Helper()
	ctx := context.Background()
	clock := clocktest.New(time.Now().UTC().Truncate(time.Millisecond))
	r := &rig{
		t: t, st: st, q: memqueue.New(memqueue.Config{VisibilityTimeout: time.Minute}), clock: clock,
		ids: idgen.New(clock.Now), rx: newReceiver(t),
	}
	now := clock.Now()
	require.NoError(t, st.PoolInsert(ctx, &pool.Pool{
		ID: r.ids.New(), Code: pool.DefaultPoolCode, Name: "Default",
		Burst: 1, Concurrency: pool.DefaultPoolConcurrency, CreatedAt: now, UpdatedAt: now,
	}))
	r.sub = &subscription.Subscription{
		ID: r.ids.New(), Code: "orders", Target: r.rx.srv.URL, Mode: cmp.Or(o.mode, dispatch.ModeImmediate),
		EventTypes:     []subscription.Binding{{EventTypeCode: "shop.order.created"}},
		TimeoutSeconds: 5, MaxAgeSeconds: cmp.Or(o.maxAgeSeconds, 3600),
		Retry:   dispatch.Retry{MaxAttempts: 50, InitialBackoffSeconds: 1, MaxBackoffSeconds: 1},
		Secrets: []subscription.Secret{{Value: subscription.NewSecret()}}, CreatedAt: now, UpdatedAt: now,
	}
	r.sub.ApplyDefaults()
	require.NoError(t, st.SubscriptionInsert(ctx, r.sub))

	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	hooks := webhook.New(webhook.Config{AllowPrivateTargets: true, UserAgent: "hooklane/test"})
	for i := range cmp.Or(o.instances, 1) {
		lc := dispatch.NewLifecycle(dispatch.LifecycleConfig{
			Store: st, Queue: r.q, NewID: r.ids.New, NowFunc: clock.Now, RandFunc: func() float64 { return 0.999 },
			Circuit: dispatch.CircuitPolicy{Store: st, Failures: o.failures, Cooldown: o.cooldown, AutoDisableAfter: o.autoDisableAfter},
			OnCircuitFunc: func(ev dispatch.CircuitEvent) {
				n, _ := r.kinds.LoadOrStore(ev, new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
			},
		})
		r.lcs = append(r.lcs, lc)
		// Each instance has its own subscription cache, as in production:
		// another instance's change (an auto-disable) reaches it with the
		// next refresh.
		subs := subscription.NewCache(subscription.CacheConfig{Store: st, RefreshInterval: 50 * time.Millisecond})
		rt := router.New(router.Config{
			Queue: r.q, Store: st, Subscriptions: subs, Lifecycle: lc, Pools: router.NewPools(st), Transport: hooks,
			WorkerID: fmt.Sprintf("router-%d", i), ReceiveWait: 100 * time.Millisecond, PoolBusyDelay: 50 * time.Millisecond,
		})
		pending := pollers.NewPending(pollers.PendingConfig{Jobs: lc, Interval: 20 * time.Millisecond})
		r.caches = append(r.caches, subs)
		wg.Go(func() { _ = subs.Run(runCtx) })
		wg.Go(func() { _ = rt.Run(runCtx) })
		wg.Go(func() { _ = pending.Run(runCtx) })
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		for _, c := range r.caches {
			c.Close()
		}
		hooks.Close()
		_ = r.q.Close()
	})
	return r
}

// waitCachesSee waits until every instance's subscription cache shows the
// subscription with status: a change reaches another instance's router
// with its cache's next refresh, and a test that moves the clock on before
// may see one more attempt of a router that does not know yet.
func (r *rig) waitCachesSee(status subscription.Status) {
	r.t.Helper()
	require.Eventually(r.t, func() bool {
		for _, c := range r.caches {
			sub, err := c.Get(context.Background(), r.sub.ID)
			if err != nil || sub.Status != status {
				return false
			}
		}
		return true
	}, 60*time.Second, 5*time.Millisecond, "the caches never showed %s", status)
}

// kind returns how often the circuit hook reported ev.
func (r *rig) kind(ev dispatch.CircuitEvent) int64 {
	n, ok := r.kinds.Load(ev)
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}

// event returns a stored-event value of group and seq (not yet stored).
func (r *rig) event(group string, seq int) *event.Event {
	now := r.clock.Now()
	return &event.Event{ID: r.ids.New(), ReceivedAt: now, DedupKey: fmt.Sprintf("/shop\x00%s-%d", group, seq), Event: cloudevent.Event{
		SpecVersion: "1.0", ID: fmt.Sprintf("%s-%d", group, seq), Source: "/shop", Type: "shop.order.created", Time: now,
		DataContentType: "application/json", Data: json.RawMessage(fmt.Sprintf(`{"group":%q,"seq":%d}`, group, seq)),
		Extensions: map[string]any{"messagegroup": group},
	}}
}

// eventFor stores the i-th event of group "race" and returns it.
func (r *rig) eventFor(t *testing.T, i int) *event.Event {
	t.Helper()
	ev := r.event("race", i)
	_, err := r.st.EventIngest(context.Background(), &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{{Event: ev}}})
	require.NoError(t, err)
	return ev
}

// insertOnly stores jobs without sending them.
func (r *rig) insertOnly(t *testing.T, jobs []*dispatch.Job) {
	t.Helper()
	require.NoError(t, r.lcs[0].Insert(context.Background(), jobs))
}

// waitKind waits until the circuit hook reported kind n times: the hooks
// run right after the write that a test may see first.
func (r *rig) waitKind(ev dispatch.CircuitEvent, n int64) {
	r.t.Helper()
	require.Eventually(r.t, func() bool { return r.kind(ev) == n }, 60*time.Second, 5*time.Millisecond,
		"hook %s never reported %d times", ev, n)
}

// post stores an event of group (its messagegroup) and seq per item and
// the subscription's job of each, and sends the jobs, in order.
func (r *rig) post(group string, seqs ...int) []*dispatch.Job {
	r.t.Helper()
	ctx := context.Background()
	var items []dispatch.EventIngestItem
	var jobs []*dispatch.Job
	for _, seq := range seqs {
		ev := r.event(group, seq)
		j := dispatch.NewEventJob(ev, r.sub.JobSettings(), r.clock.Now())
		items = append(items, dispatch.EventIngestItem{Event: ev, Jobs: []*dispatch.Job{j}})
		jobs = append(jobs, j)
	}
	_, err := r.st.EventIngest(ctx, &dispatch.EventIngestParams{Items: items})
	require.NoError(r.t, err)
	_, err = r.lcs[0].Send(ctx, jobs)
	require.NoError(r.t, err)
	return jobs
}

// circuit returns the stored circuit.
func (r *rig) circuit() *dispatch.Circuit {
	r.t.Helper()
	c, err := r.lcs[0].Circuit(context.Background(), r.sub.ID)
	require.NoError(r.t, err)
	return c
}

// waitCircuit waits until the stored circuit satisfies ok and returns it.
func (r *rig) waitCircuit(what string, ok func(c *dispatch.Circuit) bool) *dispatch.Circuit {
	r.t.Helper()
	var c *dispatch.Circuit
	require.Eventually(r.t, func() bool {
		c = r.circuit()
		return ok(c)
	}, 60*time.Second, 10*time.Millisecond, "circuit never %s", what)
	return c
}

// jobs reads the jobs again.
func (r *rig) jobs(jobs []*dispatch.Job) []*dispatch.Job {
	r.t.Helper()
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	got, err := r.st.JobGetMany(context.Background(), ids)
	require.NoError(r.t, err)
	return got
}

// waitJobs waits until every job satisfies ok.
func (r *rig) waitJobs(what string, jobs []*dispatch.Job, ok func(j *dispatch.Job) bool) {
	r.t.Helper()
	var last []string
	require.Eventually(r.t, func() bool {
		last = last[:0]
		for _, j := range r.jobs(jobs) {
			if !ok(j) {
				last = append(last, fmt.Sprintf("%s %s blockedBy=%q", j.ID, j.Status, j.BlockedBy))
			}
		}
		return len(last) == 0
	}, 60*time.Second, 20*time.Millisecond, "not every job %s", what)
}

// parkedByCircuit reports whether a job waits for the circuit.
func parkedByCircuit(j *dispatch.Job) bool {
	return j.Status == dispatch.StatusPending && j.BlockedBy == dispatch.BlockedByCircuit
}

// subscriptionEvents returns the types of the stored status events about
// the subscription, in order.
func (r *rig) subscriptionEvents() []stream.Event {
	r.t.Helper()
	events, err := r.st.StatusEventListBySubject(context.Background(), r.sub.ID)
	require.NoError(r.t, err)
	return events
}
