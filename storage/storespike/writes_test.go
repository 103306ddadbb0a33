package storespike

import (
	"context"
	"database/sql" //nolint:depguard // the spike reads the b-trees today's statements open (EXPLAIN), in a test file
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/storage/pipelinetest"
	"github.com/hooklane/hooklane/storage/sqlitestore"
)

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
	n := spikeEvents(t)
	got := pipelinetest.DeliverOneAtATime(t, st, n)
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
