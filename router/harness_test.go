package router_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/dispatch/pollers"
	"github.com/hooklane/hooklane/dispatch/pool"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/queue"
	"github.com/hooklane/hooklane/queue/memqueue"
	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/router/webhook"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/subscription"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// The HTTP test servers' and clients' idle connections close
		// asynchronously.
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
	)
}

// gw is a running gateway core: real sqlitestore, memqueue, enqueuer,
// pending poller and router, on a fast pending interval.
type gw struct {
	t     *testing.T
	st    *sqlitestore.Store
	q     *memqueue.Queue
	ids   *idgen.Generator
	jobs  *dispatch.Lifecycle
	pools *router.Pools
	rt    *router.Router
	def   *pool.Pool
	stop  func()
	// warnings keeps the gateway's last warnings and errors, for a failing
	// test's message.
	warnings *warnLog
}

type gwOptions struct {
	maxInFlight     int
	blockedRecheck  time.Duration
	pendingInterval time.Duration
	noRouter        bool
	// poolBusyDelay is the router's PoolBusyDelay; 0 is 50 ms.
	poolBusyDelay time.Duration
	// reads, when set, counts the job and event reads of the lifecycle and
	// the router (over the same store).
	reads *readCounter
	// received, when set, counts the messages the router receives.
	received *atomic.Int64
}

// receiveCounter is the queue as the router sees it, counting the
// messages it receives.
type receiveCounter struct {
	*memqueue.Queue
	n *atomic.Int64
}

func (c receiveCounter) Receive(ctx context.Context, p queue.ReceiveParams) ([]queue.Message, error) {
	msgs, err := c.Queue.Receive(ctx, p)
	c.n.Add(int64(len(msgs)))
	return msgs, err
}

// readCounter wraps the store and counts point reads of jobs and events,
// and reads of a message group's jobs.
type readCounter struct {
	*sqlitestore.Store
	jobs, events, groups atomic.Int64
}

func (c *readCounter) JobListGroup(ctx context.Context, p *dispatch.JobListGroupParams) ([]*dispatch.Job, error) {
	c.groups.Add(1)
	return c.Store.JobListGroup(ctx, p)
}

func (c *readCounter) JobGetByID(ctx context.Context, id string) (*dispatch.Job, error) {
	c.jobs.Add(1)
	return c.Store.JobGetByID(ctx, id)
}

func (c *readCounter) EventGetByID(ctx context.Context, id string) (*event.Event, error) {
	c.events.Add(1)
	return c.Store.EventGetByID(ctx, id)
}

func newGW(t *testing.T, o gwOptions) *gw {
	t.Helper()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: filepath.Join(t.TempDir(), "h.db")})
	require.NoError(t, err)
	q := memqueue.New(memqueue.Config{VisibilityTimeout: time.Minute})
	ids := idgen.New(nil)
	warnings := &warnLog{}
	logger := slog.New(warnings)
	if os.Getenv("HOOKLANE_TEST_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	now := time.Now().UTC()
	def := &pool.Pool{
		ID: ids.New(), Code: pool.DefaultPoolCode, Name: "Default", Burst: 1,
		Concurrency: pool.DefaultPoolConcurrency, CreatedAt: now, UpdatedAt: now,
	}
	require.NoError(t, st.PoolInsert(ctx, def))
	subs := subscription.NewCache(subscription.CacheConfig{Store: st, RefreshInterval: 50 * time.Millisecond})
	var lst interface {
		dispatch.LifecycleStore
		router.Store
	} = st
	if o.reads != nil {
		o.reads.Store = st
		lst = o.reads
	}
	jobs := dispatch.NewLifecycle(dispatch.LifecycleConfig{Store: lst, Queue: q, NewID: ids.New, BlockedRecheck: o.blockedRecheck, Logger: logger})
	g := &gw{t: t, st: st, q: q, ids: ids, jobs: jobs, pools: router.NewPools(st), def: def, warnings: warnings}
	// The receivers are httptest servers on 127.0.0.1: the SSRF guard is
	// tested on its own (ssrf_test.go).
	med := webhook.New(webhook.Config{AllowPrivateTargets: true, UserAgent: "hooklane/test"})
	var rq queue.Queue = q
	if o.received != nil {
		rq = receiveCounter{Queue: q, n: o.received}
	}
	g.rt = router.New(router.Config{
		Queue: rq, Store: lst, Subscriptions: subs, Lifecycle: jobs, Pools: g.pools, Transport: med, WorkerID: "test:1",
		MaxInFlight: o.maxInFlight, ReceiveWait: 200 * time.Millisecond,
		PoolBusyDelay: cmpDur(o.poolBusyDelay, 50*time.Millisecond), Logger: logger,
	})
	pending := pollers.NewPending(pollers.PendingConfig{
		Jobs: jobs, Interval: cmpDur(o.pendingInterval, 50*time.Millisecond), Logger: logger,
	})
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { ; _ = subs.Run(runCtx) })
	wg.Go(func() { ; _ = pending.Run(runCtx) })
	if !o.noRouter {
		wg.Go(func() { ; _ = g.rt.Run(runCtx) })
	}
	var once sync.Once
	// stop stops the router and the poller (the store stays open for the
	// test's checks); the cleanup closes the rest.
	g.stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
		})
	}
	t.Cleanup(func() {
		g.stop()
		med.Close()
		subs.Close()
		_ = q.Close()
		_ = st.Close()
	})
	return g
}

func cmpDur(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// taskJob returns a QUEUED TASK job to target.
func (g *gw) taskJob(target string, mode dispatch.Mode, group string, retry dispatch.Retry) *dispatch.Job {
	now := time.Now().UTC()
	retry = retry.WithDefaults()
	return &dispatch.Job{
		ID: g.ids.New(), Kind: dispatch.KindTask, Code: "test:job", TargetURL: target, Mode: mode,
		Delivery: dispatch.DeliveryPush, MessageGroup: group, TimeoutSeconds: 5, MaxAgeSeconds: 3600,
		Retry: retry, Payload: []byte(`{"n":1}`), Secret: subscription.NewSecret(), Status: dispatch.StatusQueued,
		MaxAttempts: retry.MaxAttempts, Attempts: []dispatch.Attempt{}, CreatedAt: now, UpdatedAt: now, Version: 1,
	}
}

// submit stores the jobs and sends them, in the order given.
func (g *gw) submit(jobs ...*dispatch.Job) {
	g.t.Helper()
	ctx := context.Background()
	require.NoError(g.t, g.jobs.Insert(ctx, jobs))
	failed, err := g.jobs.Send(ctx, jobs)
	require.NoError(g.t, err)
	require.Zero(g.t, failed)
}

func (g *gw) job(id string) *dispatch.Job {
	g.t.Helper()
	j, err := g.st.JobGetByID(context.Background(), id)
	require.NoError(g.t, err)
	return j
}

// waitStatus waits until the job has status want and returns it.
func (g *gw) waitStatus(id string, want dispatch.Status, within time.Duration) *dispatch.Job {
	g.t.Helper()
	var last *dispatch.Job
	require.Eventually(g.t, func() bool {
		last = g.job(id)
		return last.Status == want
	}, within, 10*time.Millisecond, "job %s never reached %s", id, want)
	return last
}

// counts returns how many of the jobs are in each status.
func (g *gw) counts(jobs []*dispatch.Job) (map[dispatch.Status]int, error) {
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	got, err := g.st.JobGetMany(context.Background(), ids)
	if err != nil {
		return nil, err
	}
	out := map[dispatch.Status]int{}
	for _, j := range got {
		out[j.Status]++
	}
	return out, nil
}

// waitAll waits until every job has status want.
func (g *gw) waitAll(jobs []*dispatch.Job, want dispatch.Status, within time.Duration) { //nolint:unparam // a general helper; every test so far waits for COMPLETED
	g.t.Helper()
	deadline := time.Now().Add(within)
	// Reading thousands of jobs costs the gateway under test CPU: poll
	// large sets slowly.
	every := 100 * time.Millisecond
	if len(jobs) > 100 {
		every = time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		c, err := g.counts(jobs)
		require.NoError(g.t, err)
		if c[want] == len(jobs) {
			return
		}
		if !time.Now().Before(deadline) {
			g.t.Errorf("not every job reached %s after %s: %v", want, within, c)
			g.describeUnfinished(jobs, want)
			for _, l := range g.warnings.lines() {
				g.t.Log(l)
			}
			g.t.FailNow()
		}
		<-tick.C
	}
}

// describeUnfinished logs every job not in status want, with its group's
// jobs and its status history, to tell a stalled job from a slow one.
func (g *gw) describeUnfinished(jobs []*dispatch.Job, want dispatch.Status) {
	g.t.Helper()
	ctx := context.Background()
	now := time.Now()
	for _, j := range jobs {
		cur := g.job(j.ID)
		if cur.Status == want {
			continue
		}
		next := "none"
		if cur.NextAttemptAt != nil {
			next = cur.NextAttemptAt.Sub(now).String()
		}
		g.t.Logf("blocker: %s", g.describeBlocker(cur.BlockedBy))
		g.t.Logf("job %s group %s: %s version %d attempts %d next in %s updated %s ago",
			cur.ID, cur.MessageGroup, cur.Status, cur.Version, cur.AttemptCount, next, now.Sub(cur.UpdatedAt))
		evs, err := g.st.StatusEventListBySubject(ctx, j.ID)
		if err != nil {
			g.t.Logf("  history: %v", err)
			continue
		}
		for _, e := range evs {
			g.t.Logf("  %s %s blockedBy=%s", e.Time.Format("15:04:05.000"), e.Type, e.Data.BlockedBy)
		}
	}
}

func (g *gw) describeBlocker(id string) string {
	if id == "" {
		return "none"
	}
	j, err := g.st.JobGetByID(context.Background(), id)
	if err != nil {
		return err.Error()
	}
	var out strings.Builder
	fmt.Fprintf(&out, "%s %s version %d attempts %d updated %s", j.ID, j.Status, j.Version, j.AttemptCount, j.UpdatedAt.Format("15:04:05.000"))
	evs, err := g.st.StatusEventListBySubject(context.Background(), id)
	if err != nil {
		fmt.Fprintf(&out, "\n    history: %v", err)
	}
	for _, e := range evs {
		fmt.Fprintf(&out, "\n    %s %s %s", e.Time.Format("15:04:05.000"), e.Type, e.Data.Error)
	}
	return out.String()
}

// warnLog is a slog handler keeping the last warnings and errors.
type warnLog struct {
	mu   sync.Mutex
	last []string
}

func (w *warnLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (w *warnLog) Handle(_ context.Context, r slog.Record) error {
	line := r.Time.Format("15:04:05.000") + " " + r.Level.String() + " " + r.Message
	r.Attrs(func(a slog.Attr) bool {
		line += " " + a.String()
		return true
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = append(w.last, line)
	if len(w.last) > 200 {
		w.last = w.last[len(w.last)-200:]
	}
	return nil
}

func (w *warnLog) WithAttrs(attrs []slog.Attr) slog.Handler { return &warnAttrs{w: w, attrs: attrs} }
func (w *warnLog) WithGroup(string) slog.Handler            { return w }

func (w *warnLog) lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.last...)
}

type warnAttrs struct {
	w     *warnLog
	attrs []slog.Attr
}

func (a *warnAttrs) Enabled(ctx context.Context, l slog.Level) bool { return a.w.Enabled(ctx, l) }
func (a *warnAttrs) Handle(ctx context.Context, r slog.Record) error {
	r.AddAttrs(a.attrs...)
	return a.w.Handle(ctx, r)
}

func (a *warnAttrs) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &warnAttrs{w: a.w, attrs: append(append([]slog.Attr(nil), a.attrs...), attrs...)}
}
func (a *warnAttrs) WithGroup(string) slog.Handler { return a }
