package sqlitestore_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hooklane/hooklane/storage/secretbox"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/storage/storetest"
)

var _ storetest.Store = (*sqlitestore.Store)(nil)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newStore opens a store on a fresh file in tb's temporary directory,
// with the gateway's default commit window.
func newStore(tb testing.TB) storetest.Store { //nolint:ireturn // a storetest.NewStoreFunc: the suite sees the port
	tb.Helper()
	s, err := sqlitestore.Open(tb.Context(), sqlitestore.Config{
		Path:         filepath.Join(tb.TempDir(), "hooklane.db"),
		CommitWindow: 500 * time.Microsecond,
	})
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, s.Close()) })
	return s
}

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, newStore)
}

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, newStore)
}

func TestStoreSealed(t *testing.T) {
	t.Parallel()
	storetest.RunSealed(t, storetest.SealedHarness{
		NewNamespace: func(tb testing.TB) string {
			tb.Helper()
			return filepath.Join(tb.TempDir(), "hooklane.db")
		},
		Open: func(tb testing.TB, path string, box *secretbox.Box) storetest.Store {
			tb.Helper()
			s, err := sqlitestore.Open(tb.Context(), sqlitestore.Config{Path: path, Box: box})
			require.NoError(tb, err)
			tb.Cleanup(func() { require.NoError(tb, s.Close()) })
			return s
		},
	})
}
