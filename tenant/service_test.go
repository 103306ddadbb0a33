package tenant_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch/clocktest"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/subscription"
	"github.com/hooklane/hooklane/tenant"
)

// fakeSubs is the subscription service: a client's subscriptions by id.
type fakeSubs struct {
	mu      sync.Mutex
	subs    []*subscription.Subscription
	deleted []string
}

func (f *fakeSubs) List(_ context.Context, p *subscription.ListParams) (*subscription.Page, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*subscription.Subscription
	for _, s := range f.subs {
		if p.ClientID != nil && s.ClientID != nil && *s.ClientID == *p.ClientID && !slices.Contains(f.deleted, s.ID) {
			out = append(out, s)
		}
	}
	return &subscription.Page{Subscriptions: out}, nil
}

func (f *fakeSubs) Delete(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, id)
	return nil
}

// fakeJobs records the subscriptions whose parked jobs were released.
type fakeJobs struct {
	mu       sync.Mutex
	released []string
}

func (f *fakeJobs) ReleaseSubscription(_ context.Context, id string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, id)
	return 1, nil
}

type bundle struct {
	svc  *tenant.Service
	st   *sqlitestore.Store
	subs *fakeSubs
	jobs *fakeJobs
	now  *atomic.Int64
}

func setup(t *testing.T) *bundle {
	t.Helper()
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: filepath.Join(t.TempDir(), "h.db")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	now := &atomic.Int64{}
	now.Store(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC).UnixMilli())
	clock := func() time.Time { return time.UnixMilli(now.Load()).UTC() }
	b := &bundle{st: st, subs: &fakeSubs{}, jobs: &fakeJobs{}, now: now}
	b.svc = tenant.NewService(tenant.ServiceConfig{
		Store: st, Subscriptions: b.subs, Jobs: b.jobs, NewIDFunc: idgen.New(clock).New, NowFunc: clock,
	})
	return b
}

func sub(id, clientID string) *subscription.Subscription {
	return &subscription.Subscription{ID: id, Code: id, ClientID: &clientID, Status: subscription.StatusActive}
}

func TestSuspendAndReactivateReleasesParkedJobs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.svc.Create(t.Context(), &tenant.Client{ID: "acme", Name: "ACME"}))
	b.subs.subs = []*subscription.Subscription{sub("s1", "acme"), sub("s2", "acme"), sub("g1", "globex")}
	clk := clocktest.New(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	gate := &tenant.Gate{Clients: b.st, NowFunc: clk.Now}
	subs := gate.Subscriptions(getter(b.subs.subs))

	got, err := subs.Get(t.Context(), "s1")
	require.NoError(t, err)
	require.Equal(t, subscription.StatusActive, got.Status)

	_, err = b.svc.Patch(t.Context(), "acme", func(c *tenant.Client) error { c.Status = tenant.StatusSuspended; return nil })
	require.NoError(t, err)
	got, err = subs.Get(t.Context(), "s1")
	require.NoError(t, err)
	require.Equal(t, subscription.StatusActive, got.Status, "within the gate's TTL the status read before holds")
	got, err = gate.SubscriptionGetByID(t.Context(), storeGetter(b.subs.subs), "s1")
	require.NoError(t, err)
	require.Equal(t, subscription.StatusPaused, got.Status, "the confirmation read before a park reads the client")
	clk.Advance(tenant.GateTTLDefault)
	got, err = subs.Get(t.Context(), "s1")
	require.NoError(t, err)
	require.Equal(t, subscription.StatusPaused, got.Status, "the router parks a suspended client's jobs")
	require.Equal(t, subscription.StatusActive, b.subs.subs[0].Status, "the stored subscription is unchanged")
	require.Empty(t, b.jobs.released)
	require.ErrorContains(t, b.svc.CheckEventClient(t.Context(), "acme", "/clientid"), "suspended")

	_, err = b.svc.Patch(t.Context(), "acme", func(c *tenant.Client) error { c.Status = tenant.StatusActive; return nil })
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"s1", "s2"}, b.jobs.released, "reactivation queues the parked jobs of every subscription of the client")
	got, err = gate.SubscriptionGetByID(t.Context(), storeGetter(b.subs.subs), "s1")
	require.NoError(t, err)
	require.Equal(t, subscription.StatusActive, got.Status, "the confirmation read sees the reactivation at once")
	got, err = subs.Get(t.Context(), "s1")
	require.NoError(t, err)
	require.Equal(t, subscription.StatusActive, got.Status)
	require.NoError(t, b.svc.CheckEventClient(t.Context(), "acme", "/clientid"))
}

type getter []*subscription.Subscription

// storeGetter is getter as the store's read (the confirmation read).
type storeGetter []*subscription.Subscription

func (g storeGetter) SubscriptionGetByID(ctx context.Context, id string) (*subscription.Subscription, error) {
	return getter(g).Get(ctx, id)
}

func (g getter) Get(_ context.Context, id string) (*subscription.Subscription, error) {
	for _, s := range g {
		if s.ID == id {
			return s, nil
		}
	}
	return nil, store.ErrNotFound
}

func TestDeleteCascades(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.svc.Create(t.Context(), &tenant.Client{ID: "acme", Name: "ACME"}))
	b.subs.subs = []*subscription.Subscription{sub("s1", "acme"), sub("g1", "globex")}
	_, secret, err := b.svc.Issue(t.Context(), "acme", tenant.IssueParams{Role: "viewer"})
	require.NoError(t, err)
	require.NoError(t, b.svc.Delete(t.Context(), "acme"))
	require.Equal(t, []string{"s1"}, b.subs.deleted)
	_, _, err = b.svc.Authenticate(t.Context(), secret)
	var un *tenant.Unauthorized
	require.ErrorAs(t, err, &un)
	require.ErrorIs(t, b.svc.Delete(t.Context(), "acme"), store.ErrNotFound)
}

func TestTokensAreHashedAndExpire(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.svc.Create(t.Context(), &tenant.Client{ID: "acme", Name: "ACME"}))
	ttl := int64(60)
	tok, secret, err := b.svc.Issue(t.Context(), "acme", tenant.IssueParams{Role: "producer", TTLSeconds: &ttl})
	require.NoError(t, err)
	require.NotContains(t, tok.Hash, secret)
	stored, err := b.st.TokenGetByHash(t.Context(), tenant.HashToken(secret))
	require.NoError(t, err)
	require.Equal(t, tok.ID, stored.ID)
	got, c, err := b.svc.Authenticate(t.Context(), secret)
	require.NoError(t, err)
	require.Equal(t, "producer", got.Role)
	require.Equal(t, "acme", c.ID)
	b.now.Add(60_000)
	_, _, err = b.svc.Authenticate(t.Context(), secret)
	var un *tenant.Unauthorized
	require.ErrorAs(t, err, &un, "expired at ExpiresAt")
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		c       tenant.Client
		pointer string
	}{
		{tenant.Client{ID: "", Name: "x", Status: tenant.StatusActive}, "/id"},
		{tenant.Client{ID: "a b", Name: "x", Status: tenant.StatusActive}, "/id"},
		{tenant.Client{ID: "a", Name: " ", Status: tenant.StatusActive}, "/name"},
		{tenant.Client{ID: "a", Name: "x", Status: "GONE"}, "/status"},
		{tenant.Client{ID: "a", Name: "x", Status: tenant.StatusActive, Metadata: map[string]string{"": "v"}}, "/metadata/"},
	} {
		err := tc.c.Validate()
		var rej *tenant.Rejection
		require.ErrorAs(t, err, &rej, "%+v", tc.c)
		require.Equal(t, tc.pointer, rej.Pointer)
		require.Equal(t, 422, rej.Status)
	}
	require.NoError(t, (&tenant.Client{ID: "Acme_1.eu:x-y", Name: "ACME", Status: tenant.StatusActive}).Validate())
}
