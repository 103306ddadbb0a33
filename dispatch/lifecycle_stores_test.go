package dispatch_test

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/storage/mongostore"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/stream"
)

// The state-machine tests (lifecycle_table_test.go,
// lifecycle_random_test.go) run the lifecycle verbs on both real stores.

// lifecycleStore is what the state-machine tests need of a store: the
// lifecycle's port, and the status events, to read back what the verbs
// emitted.
type lifecycleStore interface {
	dispatch.LifecycleStore
	StatusEventListBySubject(ctx context.Context, subject string) ([]stream.Event, error)
}

// storeKind opens a fresh, empty store of one adapter, removed when t ends.
type storeKind struct {
	name string
	open func(t *testing.T) lifecycleStore
}

func storeKinds() []storeKind {
	return []storeKind{{"sqlite", openSQLiteStore}, {"mongo", openMongoStore}}
}

// openSQLiteStore opens a store on a new SQLite file.
func openSQLiteStore(t *testing.T) lifecycleStore { //nolint:ireturn // both stores behind one test interface
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Config{Path: filepath.Join(t.TempDir(), "jobs.db")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	return st
}

// openMongoStore opens a store on a database of its own on the server at
// HOOKLANE_TEST_MONGO_URI (FerretDB in the local stack), dropped when t
// ends.
func openMongoStore(t *testing.T) lifecycleStore { //nolint:ireturn // both stores behind one test interface
	t.Helper()
	// The local stack's address by default, as the mongostore suite does:
	// make test starts it, and without it the test fails rather than skips.
	uri := cmp.Or(os.Getenv("HOOKLANE_TEST_MONGO_URI"), "mongodb://127.0.0.1:27017/")
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	db := fmt.Sprintf("hltest_dispatch_%d_%s", os.Getpid(), hex.EncodeToString(suffix))
	st, err := mongostore.Open(context.Background(), mongostore.Config{URI: uri, Database: db})
	require.NoError(t, err, "open mongo store at %s", uri)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, st.Drop(ctx))
		require.NoError(t, st.Close())
	})
	return st
}
