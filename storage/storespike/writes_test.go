package storespike

import (
	"context"
	"database/sql" //nolint:depguard // the spike reads the b-trees today's statements open (EXPLAIN), in a test file
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/dispatch/pool"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/ingest"
	"github.com/hooklane/hooklane/queue/memqueue"
	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
)

// writeCounter is today's store as the pipeline sees it, counting every
// durable write call by kind. Each call is one operation of the SQLite
// writer; when writes follow one another (one event at a time) each is a
// transaction of its own: one commit, one fsync of the WAL
// (synchronous=FULL).
type writeCounter struct {
	*sqlitestore.Store
	ingests, jobInserts, jobUpdates, fanOutMarks, statusInserts, circuitUpdates atomic.Int64
}

func (c *writeCounter) EventIngest(ctx context.Context, p *dispatch.EventIngestParams) ([]dispatch.EventIngestResult, error) {
	c.ingests.Add(1)
	return c.Store.EventIngest(ctx, p)
}

func (c *writeCounter) JobInsertMany(ctx context.Context, p *dispatch.JobInsertManyParams) error {
	c.jobInserts.Add(1)
	return c.Store.JobInsertMany(ctx, p)
}

func (c *writeCounter) JobUpdate(ctx context.Context, p *dispatch.JobUpdateParams) error {
	c.jobUpdates.Add(1)
	return c.Store.JobUpdate(ctx, p)
}

func (c *writeCounter) EventMarkFannedOut(ctx context.Context, ids []string, at time.Time) error {
	c.fanOutMarks.Add(1)
	return c.Store.EventMarkFannedOut(ctx, ids, at)
}

func (c *writeCounter) StatusEventInsertMany(ctx context.Context, events []stream.Event) error {
	c.statusInserts.Add(1)
	return c.Store.StatusEventInsertMany(ctx, events)
}

func (c *writeCounter) CircuitUpdate(ctx context.Context, p *dispatch.CircuitUpdateParams) error {
	c.circuitUpdates.Add(1)
	return c.Store.CircuitUpdate(ctx, p)
}

// okTransport answers every delivery 200 at once: the writes of a delivery
// are the store's, whatever carries it.
type okTransport struct{}

func (okTransport) Deliver(_ context.Context, _ *router.Delivery) dispatch.Outcome {
	return dispatch.Outcome{Attempted: true, Attempt: dispatch.Attempt{StatusCode: 200, DurationMs: 1}}
}

// spikeEvents is how many events TestWritesPerDeliveredEvent delivers:
// HOOKLANE_SPIKE_EVENTS, default 40 (the strace counts of BENCHMARKS.md
// ran it with 200 and 1,200 and took the difference).
func spikeEvents(t *testing.T) int {
	t.Helper()
	if v := os.Getenv("HOOKLANE_SPIKE_EVENTS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		return n
	}
	return 40
}

// TestWritesPerDeliveredEvent runs today's embedded pipeline — sqlitestore,
// the in-process queue, the subscription cache, the job lifecycle, the
// ingest service and the router, wired as cmd/hooklane wires them, the
// transport answering 200 — for N single events of one subscription, one
// at a time, and counts the store's durable writes per delivered event:
// ingest 1 (event, job, three status events), claim 1 (job, one status
// event), outcome 1 (job, one status event), nothing else. It then counts
// the rows written and, with EXPLAIN, the b-trees each statement opens for
// writing.
func TestWritesPerDeliveredEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hooklane.db")
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: path, CommitWindow: commitWindow})
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	cw := &writeCounter{Store: st}
	q := memqueue.New(memqueue.Config{VisibilityTimeout: time.Minute})
	defer func() { require.NoError(t, q.Close()) }()
	ids := idgen.New(nil)
	now := time.Now().UTC().Truncate(time.Millisecond)
	require.NoError(t, st.PoolInsert(ctx, &pool.Pool{
		ID: ids.New(), Code: pool.DefaultPoolCode, Name: "Default", Burst: 1,
		Concurrency: pool.DefaultPoolConcurrency, CreatedAt: now, UpdatedAt: now,
	}))
	require.NoError(t, st.EventTypeInsert(ctx, &schema.EventType{
		Code: "shop.order.created", Name: "x", Status: schema.TypeCurrent, CreatedAt: now, UpdatedAt: now,
	}))
	sub := &subscription.Subscription{
		ID: ids.New(), Code: "orders", EventTypes: []subscription.Binding{{EventTypeCode: "shop.order.created"}},
		Target: "http://127.0.0.1:9/hook", CreatedAt: now, UpdatedAt: now,
	}
	sub.ApplyDefaults()
	require.NoError(t, st.SubscriptionInsert(ctx, sub))

	subs := subscription.NewCache(subscription.CacheConfig{Store: st})
	defer subs.Close()
	registry := schema.NewRegistry(schema.RegistryConfig{Store: st})
	jobs := dispatch.NewLifecycle(dispatch.LifecycleConfig{
		Store: cw, Queue: q, NewID: ids.New, Circuit: dispatch.CircuitPolicy{Store: cw},
	})
	svc := ingest.New(ingest.Config{Store: cw, Validator: registry, Matcher: subs, Jobs: jobs, IDs: ids})
	delivered := make(chan struct{}, 1)
	rt := router.New(router.Config{
		Queue: q, Store: cw, Subscriptions: subs, Lifecycle: jobs, Pools: router.NewPools(st), Transport: okTransport{},
		WorkerID: "spike:1", ReceiveWait: 50 * time.Millisecond,
		OnAttemptFunc: func(*dispatch.Job, dispatch.Outcome) { delivered <- struct{}{} },
	})
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = rt.Run(runCtx) })
	defer func() { cancel(); wg.Wait() }()

	n := spikeEvents(t)
	for i := range n {
		ev := cloudevent.Event{
			SpecVersion: "1.0", ID: fmt.Sprintf("order-%d", i), Source: "/shop/eu-1", Type: "shop.order.created",
			Data: []byte(`{"orderId":"` + strconv.Itoa(i) + `"}`),
		}
		res, err := svc.Ingest(ctx, &ingest.Request{Mode: ingest.ModeStructured, Events: []cloudevent.Event{ev}})
		require.NoError(t, err)
		require.Len(t, res[0].Jobs, 1)
		select {
		case <-delivered:
		case <-time.After(30 * time.Second):
			require.FailNow(t, "event not delivered", "event %d", i)
		}
	}
	cancel()
	wg.Wait()

	got := map[string]int64{
		"EventIngest": cw.ingests.Load(), "JobInsertMany": cw.jobInserts.Load(), "JobUpdate": cw.jobUpdates.Load(),
		"EventMarkFannedOut": cw.fanOutMarks.Load(), "StatusEventInsertMany": cw.statusInserts.Load(),
		"CircuitUpdate": cw.circuitUpdates.Load(),
	}
	t.Logf("durable write calls for %d delivered events: %v", n, got)
	require.Equal(t, map[string]int64{
		"EventIngest": int64(n), "JobInsertMany": 0, "JobUpdate": int64(2 * n),
		"EventMarkFannedOut": 0, "StatusEventInsertMany": 0, "CircuitUpdate": 0,
	}, got, "the writes of a delivered event changed: update BENCHMARKS.md's table")

	rows := tableRows(t, path)
	t.Logf("rows stored for %d delivered events: %v", n, rows)
	require.Equal(t, map[string]int{
		"events": n, "event_extensions": 0, "jobs": n, "status_events": 5 * n,
	}, rows)

	opened := openedBTrees(t, path)
	t.Logf("b-trees opened for writing per statement: %v", opened)
	// A statement opens every b-tree it may change; a partial index is
	// opened whether or not the row falls in it, and the narrow update
	// opens the primary key it finds the row by. events: the table, its
	// primary key, the dedup key and six indexes (type, source, subject,
	// messagegroup, received_at+id, and the not-fanned-out partial index
	// an ingest leaves alone); jobs: the table, its primary key and eight
	// indexes (the partial finished one left alone at insert);
	// status_events: the table, its primary key and two indexes; the job
	// update: the table, the primary key and the three indexes on status
	// or updated_at.
	require.Equal(t, map[string]int{
		"insert event": 9, "insert job": 10, "insert status event": 4, "update job (narrow)": 5,
	}, opened)
}

// tableRows counts the rows of the data plane's tables.
func tableRows(t *testing.T, path string) map[string]int {
	t.Helper()
	db := openReadOnly(t, path)
	rows := map[string]int{}
	for _, table := range []string{"events", "event_extensions", "jobs", "status_events"} {
		var n int
		require.NoError(t, db.QueryRowContext(context.Background(), `SELECT count(*) FROM `+table).Scan(&n))
		rows[table] = n
	}
	return rows
}

// openedBTrees counts the OpenWrite opcodes of the EXPLAIN of each of
// today's hot statements (sqlitestore's event.go, job.go and
// status_event.go): the b-trees, table and indexes, the statement opens for
// writing. A partial index is opened whether or not the row falls in it.
func openedBTrees(t *testing.T, path string) map[string]int {
	t.Helper()
	db := openReadOnly(t, path)
	statements := map[string]string{
		"insert event": `INSERT INTO events (id, dedup_key, type, source, subject, messagegroup,
			received_at, fanned_out_at, schema_version, doc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		"insert job": `INSERT INTO jobs (id, status, next_attempt_at, updated_at, lease_expires_at,
			created_at, message_group, subscription_id, subscription, event_id, code, order_key, delivery,
			secret, doc, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1) ON CONFLICT (id) DO NOTHING`,
		"insert status event": `INSERT INTO status_events (id, type, time, subject, data)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		"update job (narrow)": `UPDATE jobs SET status = ?, next_attempt_at = ?, updated_at = ?,
			lease_expires_at = ?, delivery = ?, secret = ?, doc = ?, version = version + 1
			WHERE id = ? AND version = ? AND created_at = ? AND message_group = ? AND subscription_id = ?
			AND subscription = ? AND event_id = ? AND code = ? AND order_key = ?`,
	}
	roots := map[string]string{} // root page → b-tree name
	queryRows(t, db, `SELECT rootpage, name FROM sqlite_master WHERE rootpage > 0`, nil, func(vals []any) {
		roots[fmt.Sprint(vals[0])] = fmt.Sprint(vals[1])
	})
	opened := map[string]int{}
	names := map[string][]string{}
	for name, stmt := range statements {
		args := make([]any, strings.Count(stmt, "?"))
		queryRows(t, db, `EXPLAIN `+stmt, args, func(vals []any) {
			if fmt.Sprint(vals[1]) == "OpenWrite" {
				opened[name]++
				names[name] = append(names[name], roots[fmt.Sprint(vals[3])])
			}
		})
	}
	t.Logf("b-trees opened for writing: %v", names)
	return opened
}

// queryRows runs query and calls row with each row's values.
func queryRows(t *testing.T, db *sql.DB, query string, args []any, row func(vals []any)) {
	t.Helper()
	rs, err := db.QueryContext(context.Background(), query, args...)
	require.NoError(t, err)
	defer rs.Close()
	cols, err := rs.Columns()
	require.NoError(t, err)
	for rs.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rs.Scan(ptrs...))
		row(vals)
	}
	require.NoError(t, rs.Err())
}

func openReadOnly(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}
