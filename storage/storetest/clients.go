package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/tenant"
)

func newClient(id string) *tenant.Client {
	return &tenant.Client{
		ID: id, Name: "Client " + id, Description: "a tenant",
		Metadata: map[string]string{"plan": "gold"}, Status: tenant.StatusActive,
		CreatedAt: baseTime(), UpdatedAt: baseTime(),
	}
}

func (b *testBundle) newToken(clientID, hash string) *tenant.Token {
	return &tenant.Token{
		ID: b.ids.New(), ClientID: clientID, Name: "portal", Role: "viewer", Hash: hash,
		ExpiresAt: baseTime().Add(time.Hour), CreatedAt: baseTime(),
	}
}

func testClient(t *testing.T, newStore NewStoreFunc) {
	t.Helper()

	t.Run("JobListBySubscriptions", func(t *testing.T) {
		t.Parallel()
		testJobListBySubscriptions(t, newStore)
	})

	t.Run("InsertGetListUpdate", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		for _, id := range []string{"charlie", "alpha", "bravo:eu"} {
			require.NoError(t, b.store.ClientInsert(b.ctx, newClient(id)))
		}
		require.ErrorIs(t, b.store.ClientInsert(b.ctx, newClient("alpha")), store.ErrConflict)
		got, err := b.store.ClientGetByID(b.ctx, "alpha")
		require.NoError(t, err)
		require.Equal(t, newClient("alpha"), got)
		_, err = b.store.ClientGetByID(b.ctx, "missing")
		require.ErrorIs(t, err, store.ErrNotFound)

		pg, err := b.store.ClientList(b.ctx, &tenant.ListParams{Limit: 2})
		require.NoError(t, err)
		require.Equal(t, []*tenant.Client{newClient("alpha"), newClient("bravo:eu")}, pg.Clients, "id order")
		require.NotEmpty(t, pg.NextCursor)
		pg, err = b.store.ClientList(b.ctx, &tenant.ListParams{Limit: 2, Cursor: pg.NextCursor})
		require.NoError(t, err)
		require.Equal(t, []*tenant.Client{newClient("charlie")}, pg.Clients)
		require.Empty(t, pg.NextCursor)

		up := newClient("bravo:eu")
		up.Status = tenant.StatusSuspended
		up.Metadata = map[string]string{}
		up.UpdatedAt = baseTime().Add(time.Minute)
		require.NoError(t, b.store.ClientUpdate(b.ctx, up))
		got, err = b.store.ClientGetByID(b.ctx, "bravo:eu")
		require.NoError(t, err)
		require.Equal(t, up, got)
		pg, err = b.store.ClientList(b.ctx, &tenant.ListParams{Status: tenant.StatusSuspended})
		require.NoError(t, err)
		require.Equal(t, []*tenant.Client{up}, pg.Clients)
		require.ErrorIs(t, b.store.ClientUpdate(b.ctx, newClient("missing")), store.ErrNotFound)
	})

	t.Run("TokensAndDelete", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		require.NoError(t, b.store.ClientInsert(b.ctx, newClient("a")))
		require.NoError(t, b.store.ClientInsert(b.ctx, newClient("b")))
		ta1, ta2, tb := b.newToken("a", "h1"), b.newToken("a", "h2"), b.newToken("b", "h3")
		for _, tk := range []*tenant.Token{ta1, ta2, tb} {
			require.NoError(t, b.store.TokenInsert(b.ctx, tk))
		}
		require.ErrorIs(t, b.store.TokenInsert(b.ctx, b.newToken("b", "h1")), store.ErrConflict, "hashes are unique")

		got, err := b.store.TokenGetByHash(b.ctx, "h2")
		require.NoError(t, err)
		require.Equal(t, ta2, got)
		_, err = b.store.TokenGetByHash(b.ctx, "nope")
		require.ErrorIs(t, err, store.ErrNotFound)

		list, err := b.store.TokenList(b.ctx, "a")
		require.NoError(t, err)
		require.Equal(t, []*tenant.Token{ta1, ta2}, list)

		require.ErrorIs(t, b.store.TokenDelete(b.ctx, "b", ta1.ID), store.ErrNotFound, "another client's token")
		require.NoError(t, b.store.TokenDelete(b.ctx, "a", ta1.ID))
		_, err = b.store.TokenGetByHash(b.ctx, "h1")
		require.ErrorIs(t, err, store.ErrNotFound, "revoked")
		require.ErrorIs(t, b.store.TokenDelete(b.ctx, "a", ta1.ID), store.ErrNotFound)

		require.NoError(t, b.store.ClientDelete(b.ctx, "a"))
		_, err = b.store.ClientGetByID(b.ctx, "a")
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = b.store.TokenGetByHash(b.ctx, "h2")
		require.ErrorIs(t, err, store.ErrNotFound, "a deleted client's tokens go with it")
		list, err = b.store.TokenList(b.ctx, "a")
		require.NoError(t, err)
		require.Empty(t, list)
		_, err = b.store.TokenGetByHash(b.ctx, "h3")
		require.NoError(t, err, "another client's tokens stay")
		require.ErrorIs(t, b.store.ClientDelete(b.ctx, "a"), store.ErrNotFound)
	})
}

// testJobListBySubscriptions: JobListParams.SubscriptionIDs keeps the jobs
// of those subscriptions (a client's, API.md §11); empty keeps none.
func testJobListBySubscriptions(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	b := setup(t, newStore)
	var jobs []*dispatch.Job
	for _, sub := range []string{"sub-a", "sub-b", "sub-c", "sub-a"} {
		jobs = append(jobs, b.newJob(func(j *dispatch.Job) { j.SubscriptionID = sub }))
	}
	require.NoError(t, b.store.JobInsertMany(b.ctx, &dispatch.JobInsertManyParams{Jobs: jobs}))
	ids := func(p *dispatch.JobListParams) []string {
		pg, err := b.store.JobList(b.ctx, p)
		require.NoError(t, err)
		var out []string
		for _, j := range pg.Jobs {
			out = append(out, j.ID)
		}
		return out
	}
	require.Equal(t, []string{jobs[3].ID, jobs[2].ID, jobs[0].ID}, ids(&dispatch.JobListParams{SubscriptionIDs: []string{"sub-a", "sub-c"}}))
	require.Empty(t, ids(&dispatch.JobListParams{SubscriptionIDs: []string{}}))
	require.Len(t, ids(&dispatch.JobListParams{}), 4, "nil does not filter")
	require.Equal(t, []string{jobs[1].ID}, ids(&dispatch.JobListParams{SubscriptionIDs: []string{"sub-b"}, Status: dispatch.StatusQueued}))
}
