package sqlitestore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// openWindowed opens a store whose writer waits window for more writes.
// The window is set past Open's bound on purpose: a test that relied on it
// running out would hang instead of passing by luck.
func openWindowed(t *testing.T, window time.Duration) *Store {
	t.Helper()
	s, err := Open(t.Context(), Config{Path: filepath.Join(t.TempDir(), "s.db")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	s.commitWindow = window // read by the writer only after it takes an operation
	return s
}

// insertPool is a write of one row: a pool named code.
func insertPool(code string) func(ctx context.Context, tx *writeTx) error {
	return func(ctx context.Context, tx *writeTx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO pools (id, code, doc) VALUES (?, ?, '{}')`, "pool-"+code, code)
		return err
	}
}

// hand gives the writer one operation and returns once it took it (the
// channel is unbuffered), with the channel of the operation's result.
func hand(t *testing.T, s *Store, code string) <-chan error {
	t.Helper()
	op := &writeOp{ctx: context.Background(), done: make(chan error, 1), fn: insertPool(code)}
	select {
	case s.ops <- op:
	case <-time.After(time.Minute):
		t.Fatal("the writer took no operation")
	}
	return op.done
}

// concurrent hands two writes to a writer held busy and returns once it
// took both together, with their results' channels: a transaction of two,
// which makes the writer gather.
func concurrent(t *testing.T, s *Store) []<-chan error {
	t.Helper()
	release := make(chan struct{})
	held := s.HoldWriter(t.Context(), release)
	var results []<-chan error
	for _, code := range []string{"c1", "c2"} {
		done := make(chan error, 1)
		results = append(results, done)
		go func() { done <- s.write(context.Background(), insertPool(code)) }()
	}
	require.Eventually(t, func() bool { return s.Waiting() == 2 }, time.Minute, time.Millisecond)
	close(release)
	require.NoError(t, <-held)
	require.Eventually(t, func() bool { return s.Waiting() == 0 }, time.Minute, time.Millisecond)
	return results
}

// waitAll waits for every write's result and requires success.
func waitAll(t *testing.T, results []<-chan error, why string) {
	t.Helper()
	for i, done := range results {
		select {
		case err := <-done:
			require.NoError(t, err, "write %d", i)
		case <-time.After(time.Minute):
			t.Fatalf("write %d not committed: %s", i, why)
		}
	}
}

// TestCommitWindowGathersOneTransaction: a lone write commits at once; a
// transaction the writer finds two writes for waits for more, handed one
// after another (each only once the writer took the one before), until it
// holds eight; so does the transaction after one of more than one write.
// The window is far longer than the test's waits: a transaction that
// waited it out would fail the test.
func TestCommitWindowGathersOneTransaction(t *testing.T) {
	t.Parallel()
	s := openWindowed(t, time.Hour)
	waitAll(t, []<-chan error{hand(t, s, "first")}, "a lone write waited for company")

	before := s.batches.Load()
	results := concurrent(t, s)
	for i := len(results); i < commitWindowOps; i++ {
		results = append(results, hand(t, s, fmt.Sprint("a", i)))
	}
	waitAll(t, results, "the window did not end at eight writes")
	require.Equal(t, int64(2), s.batches.Load()-before, "the held write's commit, then one for the eight")

	// The last commit held eight: the next lone write waits for company.
	results = results[:0]
	for i := range commitWindowOps {
		results = append(results, hand(t, s, fmt.Sprint("b", i)))
	}
	waitAll(t, results, "the window did not end at eight writes")
	require.Equal(t, int64(3), s.batches.Load()-before, "the eight writes after a shared commit shared one")
}

// TestCommitWindowEndsOnClose: a writer waiting out its window commits
// what it gathered when the store closes, and the writes succeed.
func TestCommitWindowEndsOnClose(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), Config{Path: filepath.Join(t.TempDir(), "s.db")})
	require.NoError(t, err)
	s.commitWindow = time.Hour
	results := concurrent(t, s)
	require.NoError(t, s.Close())
	waitAll(t, results, "the gathered writes were not committed on close")
}

// TestNoCommitWindowCommitsAtOnce: without a window a transaction of
// concurrent writes commits without waiting for more.
func TestNoCommitWindowCommitsAtOnce(t *testing.T) {
	t.Parallel()
	s := openWindowed(t, 0)
	waitAll(t, concurrent(t, s), "concurrent writes waited without a window")
	waitAll(t, []<-chan error{hand(t, s, "a")}, "a lone write waited without a window")
}

// TestWriteTakenOutlivesItsContext: a write the writer has taken is
// answered by its commit even when the caller's context ends meanwhile (it
// lands, so an error would hide it), while a write the writer has not
// taken yet is abandoned with the context's error and never runs.
func TestWriteTakenOutlivesItsContext(t *testing.T) {
	t.Parallel()
	s := openWindowed(t, 0)

	// Taken: the write's fn runs, its context ends, then it commits.
	ctx, cancel := context.WithCancel(t.Context())
	running, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.write(ctx, func(ctx context.Context, tx *writeTx) error {
			close(running)
			<-release
			return insertPool("taken")(ctx, tx)
		})
	}()
	<-running
	cancel()
	var err error
	select {
	case err = <-done:
		t.Errorf("the caller was answered before its taken write committed: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if !t.Failed() {
		err = <-done
	}
	require.NoError(t, err, "the taken write's answer is its commit's")
	var n int
	require.NoError(t, s.rdb.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM pools WHERE code = 'taken'`).Scan(&n))
	require.Equal(t, 1, n)

	// Waiting: the writer is busy with another write; the caller gives up.
	hold := make(chan struct{})
	held := s.HoldWriter(t.Context(), hold)
	ctx, cancel = context.WithCancel(t.Context())
	done = make(chan error, 1)
	go func() { done <- s.write(ctx, insertPool("abandoned")) }()
	require.Eventually(t, func() bool { return s.Waiting() == 1 }, time.Minute, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	close(hold)
	require.NoError(t, <-held)
	require.NoError(t, s.write(t.Context(), insertPool("after")))
	require.NoError(t, s.rdb.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM pools WHERE code = 'abandoned'`).Scan(&n))
	require.Zero(t, n, "an abandoned write never runs")
}
