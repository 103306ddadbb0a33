package sqlitestore_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/subscription"
	"github.com/hooklane/hooklane/tenant"
)

// A subscription whose clientId names no client (stored before clients
// existed) gets a client when the store opens, so an upgrade loses nothing.
func TestOpenCreatesClientsOfExistingSubscriptions(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hooklane.db")
	s := openStore(t, path)
	legacy := "legacy-co"
	sub := &subscription.Subscription{ID: "01JD0000000000000000000001", Code: "orders", ClientID: &legacy, Status: subscription.StatusActive}
	require.NoError(t, s.SubscriptionInsert(t.Context(), sub))
	anchor := &subscription.Subscription{ID: "01JD0000000000000000000002", Code: "orders", Status: subscription.StatusActive}
	require.NoError(t, s.SubscriptionInsert(t.Context(), anchor))
	_, err := s.ClientGetByID(t.Context(), legacy)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.NoError(t, s.Close())

	s = openStore(t, path)
	defer func() { require.NoError(t, s.Close()) }()
	c, err := s.ClientGetByID(t.Context(), legacy)
	require.NoError(t, err)
	require.Equal(t, tenant.StatusActive, c.Status)
	require.Equal(t, legacy, c.Name)
	pg, err := s.ClientList(t.Context(), &tenant.ListParams{})
	require.NoError(t, err)
	require.Len(t, pg.Clients, 1, "only named clients are created")
}
