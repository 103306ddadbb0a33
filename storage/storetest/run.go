package storetest

import (
	"testing"
)

// NewStoreFunc returns a fresh, empty store in its own namespace (a new
// SQLite file, a new Mongo database) and registers its cleanup (Close, drop)
// with tb.Cleanup. Run and Bench call it once per subtest or benchmark.
type NewStoreFunc func(tb testing.TB) Store

// Run runs the conformance suite against the stores newStore returns. Every
// subtest runs in parallel on its own store.
//
// Conventions every adapter must follow, beyond the port doc comments:
//
//   - Timestamps are stored with (at least) millisecond precision and come
//     back in UTC; the suite's fixtures are millisecond-precise UTC times and
//     are compared exactly.
//   - A freshly inserted job has Version 1 and an inserted event type
//     Revision 1; the insert also sets that number on the passed value.
//   - JobUpdate, EventTypeUpdate, CircuitUpdate, ReplayUpdate and
//     SubscriptionUpdate return store.ErrNotFound for a missing record and
//     store.ErrStale (which is also a store.ErrConflict) for a stale version
//     or revision.
//   - Cursors are opaque strings; a page with no further page has an empty
//     NextCursor.
//   - After Close every method returns an error matching store.ErrClosed, and
//     Close may be called again (it returns nil).
func Run(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	t.Run("Event", func(t *testing.T) { t.Parallel(); testEvent(t, newStore) })
	t.Run("Job", func(t *testing.T) { t.Parallel(); testJob(t, newStore) })
	t.Run("Pool", func(t *testing.T) { t.Parallel(); testPool(t, newStore) })
	t.Run("Subscription", func(t *testing.T) { t.Parallel(); testSubscription(t, newStore) })
	t.Run("EventType", func(t *testing.T) { t.Parallel(); testEventType(t, newStore) })
	t.Run("StatusEvent", func(t *testing.T) { t.Parallel(); testStatusEvent(t, newStore) })
	t.Run("Lifecycle", func(t *testing.T) { t.Parallel(); testLifecycle(t, newStore) })
	t.Run("Circuit", func(t *testing.T) { t.Parallel(); testCircuit(t, newStore) })
	t.Run("Health", func(t *testing.T) { t.Parallel(); testHealth(t, newStore) })
	t.Run("Client", func(t *testing.T) { t.Parallel(); testClient(t, newStore) })
	t.Run("Replay", func(t *testing.T) { t.Parallel(); testReplay(t, newStore) })
}
