package sqlitestore_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/pool"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/store"
)

// waitQueued waits until n callers wait to hand an operation to the held
// writer. There is no signal for "blocked in a channel send", so it polls
// the store's own counter.
func waitQueued(t *testing.T, s *sqlitestore.Store, n int64) {
	t.Helper()
	require.Eventually(t, func() bool { return s.Waiting() == n }, 60*time.Second, time.Millisecond)
}

func openStore(t *testing.T, path string) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: path})
	require.NoError(t, err)
	return s
}

func newPool(code string) *pool.Pool {
	return &pool.Pool{ID: "pool-" + code, Code: code, Name: code, Concurrency: 1}
}

func TestOpenRequiresPath(t *testing.T) {
	t.Parallel()
	_, err := sqlitestore.Open(t.Context(), sqlitestore.Config{})
	require.Error(t, err)
}

func TestReopenKeepsDataAndMigratesOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hooklane.db")
	s := openStore(t, path)
	require.NoError(t, s.PoolInsert(t.Context(), newPool("kept")))
	require.NoError(t, s.Close())

	s = openStore(t, path)
	got, err := s.PoolGetByCode(t.Context(), "kept")
	require.NoError(t, err)
	require.Equal(t, "pool-kept", got.ID)
	require.NoError(t, s.Close())

	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	var n, version int
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &version))
	files, err := filepath.Glob("migrations/*.sql")
	require.NoError(t, err)
	require.Len(t, files, n, "each migration is recorded once")
	require.GreaterOrEqual(t, version, 3, "0003_clients is applied")
	var mode string
	require.NoError(t, db.QueryRowContext(t.Context(), `PRAGMA journal_mode`).Scan(&mode))
	require.Equal(t, "wal", mode)
}

func TestGroupCommitIsolatesFailures(t *testing.T) {
	t.Parallel()
	s := openStore(t, filepath.Join(t.TempDir(), "hooklane.db"))
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	ctx := t.Context()

	release := make(chan struct{})
	held := s.HoldWriter(ctx, release)
	batches0, _ := s.BatchStats()

	const writers, dups = 60, 10
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			code := "dup"
			if i >= dups {
				code = "unique-" + letters(i)
			}
			p := newPool(code)
			p.ID = "pool-" + letters(i)
			errs[i] = s.PoolInsert(ctx, p)
		})
	}
	waitQueued(t, s, writers)
	close(release)
	require.NoError(t, <-held)
	wg.Wait()

	ok := 0
	for i, err := range errs {
		if i >= dups {
			require.NoError(t, err, "writer %d", i)
			continue
		}
		if err == nil {
			ok++
			continue
		}
		require.ErrorIs(t, err, store.ErrConflict)
	}
	require.Equal(t, 1, ok, "exactly one pool with the duplicate code is stored")
	pools, err := s.PoolList(ctx)
	require.NoError(t, err)
	require.Len(t, pools, writers-dups+1)

	batches, _ := s.BatchStats()
	// The held operation's batch plus the waiting writers: one batch holds
	// them all when group commit works, 60 batches when it does not.
	require.LessOrEqual(t, batches-batches0, int64(5), "writes were not grouped")
}

func TestWriteCancelledWhileWaiting(t *testing.T) {
	t.Parallel()
	s := openStore(t, filepath.Join(t.TempDir(), "hooklane.db"))
	t.Cleanup(func() { require.NoError(t, s.Close()) })

	release := make(chan struct{})
	held := s.HoldWriter(t.Context(), release)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- s.PoolInsert(ctx, newPool("never")) }()
	waitQueued(t, s, 1)
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	close(release)
	require.NoError(t, <-held)

	_, err := s.PoolGetByCode(t.Context(), "never")
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestCloseWithWaitingWrites(t *testing.T) {
	t.Parallel()
	s := openStore(t, filepath.Join(t.TempDir(), "hooklane.db"))

	release := make(chan struct{})
	held := s.HoldWriter(t.Context(), release)
	const writers = 5
	errs := make(chan error, writers)
	for i := range writers {
		go func() { errs <- s.PoolInsert(t.Context(), newPool(letters(i))) }()
	}
	waitQueued(t, s, writers)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	close(release)
	require.NoError(t, <-held)
	require.NoError(t, <-closed)
	for range writers {
		if err := <-errs; err != nil {
			require.ErrorIs(t, err, store.ErrClosed)
		}
	}
	require.ErrorIs(t, s.PoolInsert(t.Context(), newPool("late")), store.ErrClosed)
}

func TestFailedOperationWritesNothing(t *testing.T) {
	t.Parallel()
	s := openStore(t, filepath.Join(t.TempDir(), "hooklane.db"))
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	ctx := t.Context()
	event := func(id, dedup string) dispatch.EventIngestItem {
		return dispatch.EventIngestItem{Event: &event.Event{
			ID: id, DedupKey: dedup, ReceivedAt: time.UnixMilli(1_700_000_000_000).UTC(),
			Event: cloudevent.Event{SpecVersion: "1.0", ID: id, Source: "/s", Type: "t"},
		}}
	}
	_, err := s.EventIngest(ctx, &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{event("01J0000000000000000000000A", "a")}})
	require.NoError(t, err)

	// In one group commit: an ingest whose second item clashes on the event
	// id after its first item was written, and an independent insert.
	release := make(chan struct{})
	held := s.HoldWriter(ctx, release)
	ingestErr := make(chan error, 1)
	go func() {
		_, err := s.EventIngest(ctx, &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{
			event("01J0000000000000000000000B", "b"),
			event("01J0000000000000000000000A", "c"),
		}})
		ingestErr <- err
	}()
	poolErr := make(chan error, 1)
	go func() { poolErr <- s.PoolInsert(ctx, newPool("independent")) }()
	waitQueued(t, s, 2)
	close(release)
	require.NoError(t, <-held)

	require.ErrorIs(t, <-ingestErr, store.ErrConflict)
	require.NoError(t, <-poolErr)
	_, err = s.EventGetByID(ctx, "01J0000000000000000000000B")
	require.ErrorIs(t, err, store.ErrNotFound, "the failed operation's first item is rolled back")
	_, err = s.PoolGetByCode(ctx, "independent")
	require.NoError(t, err, "the other operation of the batch is committed")
}

func TestManyIDs(t *testing.T) {
	t.Parallel()
	s := openStore(t, filepath.Join(t.TempDir(), "hooklane.db"))
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	ctx := t.Context()
	const n = 1234 // more than one IN list
	jobs := make([]*dispatch.Job, n)
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("job-%05d", i)
		jobs[i] = &dispatch.Job{ID: ids[i], Status: dispatch.StatusQueued, SubscriptionID: "s", CreatedAt: time.UnixMilli(1).UTC(), UpdatedAt: time.UnixMilli(1).UTC()}
	}
	require.NoError(t, s.JobInsertMany(ctx, &dispatch.JobInsertManyParams{Jobs: jobs}))
	got, err := s.JobGetMany(ctx, ids)
	require.NoError(t, err)
	require.Len(t, got, n)
}

// TestSynchronous: a commit is synced to disk by default (FULL: a 201
// survives a power loss); NORMAL is the documented relaxed choice; anything
// else is refused.
func TestSynchronous(t *testing.T) {
	t.Parallel()
	tests := []struct {
		setting string
		want    int
	}{
		{"", 2},
		{sqlitestore.SynchronousFull, 2},
		{sqlitestore.SynchronousNormal, 1},
	}
	for _, tt := range tests {
		t.Run("setting="+tt.setting, func(t *testing.T) {
			t.Parallel()
			s, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: filepath.Join(t.TempDir(), "s.db"), Synchronous: tt.setting})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, s.Close()) })
			got, err := s.WriterSynchronous(t.Context())
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	_, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: filepath.Join(t.TempDir(), "s.db"), Synchronous: "OFF"})
	require.Error(t, err)
}

// letters names i (0 ≤ i < 676) with two letters: Aa, Ab, …, Zz.
func letters(i int) string {
	const az = "abcdefghijklmnopqrstuvwxyz"
	return strings.ToUpper(az[i/26:i/26+1]) + az[i%26:i%26+1]
}
