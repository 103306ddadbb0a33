package storetest

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/dispatch/pool"
	"github.com/hooklane/hooklane/storage/secretbox"
	"github.com/hooklane/hooklane/subscription"
)

// SealedHarness opens an adapter's stores on shared namespaces with a
// chosen secretbox.Box, for RunSealed.
type SealedHarness struct {
	// NewNamespace returns a fresh, empty namespace (a SQLite file path, a
	// Mongo database name), removed when tb ends.
	NewNamespace func(tb testing.TB) string
	// Open opens a store on namespace ns sealing with box (nil: none). The
	// suite closes it; Open also registers a Close with tb.Cleanup, which
	// must then return nil.
	Open func(tb testing.TB, ns string, box *secretbox.Box) Store
}

// RunSealed runs the conformance suite of secrets at rest (API.md §14):
// with a box every secret of a subscription (signing secrets, auth
// secrets, TLS client key) and of a job (signing secret, auth secrets,
// TLS client key) round-trips through every read, and is stored sealed —
// a store of the same namespace without the key, or with another, cannot
// read it; SecretSealAll seals the plain values a keyless store wrote
// (the migration when a key is first set), counts what it found, and
// refuses values of another key.
func RunSealed(t *testing.T, h SealedHarness) {
	t.Helper()
	t.Run("RoundTrip", func(t *testing.T) { t.Parallel(); testSealedRoundTrip(t, h) })
	t.Run("AtRest", func(t *testing.T) { t.Parallel(); testSealedAtRest(t, h) })
	t.Run("Migration", func(t *testing.T) { t.Parallel(); testSealedMigration(t, h) })
}

func testBox(t testing.TB, fill byte) *secretbox.Box {
	t.Helper()
	box, err := secretbox.New(bytes.Repeat([]byte{fill}, secretbox.KeySize))
	require.NoError(t, err)
	return box
}

// sealedFixture is a subscription and a TASK job holding every kind of
// secret, and an EVENT job holding none.
type sealedFixture struct {
	sub             *subscription.Subscription
	task, eventJob  *dispatch.Job
	secretsCount    int
	everySecretText []string
}

func newSealedFixture(ids *idgen.Generator) *sealedFixture {
	now := baseTime()
	b := &testBundle{ids: ids}
	sub := b.newSubscription("sealed", nil)
	sub.Auth = &endpoint.Auth{Type: endpoint.AuthOAuth2, TokenURL: "https://idp.example/token", ClientID: "gw", ClientSecret: "oauth-client-secret"}
	sub.TLS = &endpoint.TLS{ClientCertificate: "client-cert-pem", ClientKey: "client-key-pem-of-sub", CACertificate: "ca-pem"}
	// A destination is sealed whole, as one secret (its type stays in
	// clear). The store does not check that a subscription has a target
	// or a destination, not both.
	sub.Destination = json.RawMessage(`{"type":"kafka","brokers":["kafka.example:9092"],"topic":"orders",` +
		`"sasl":{"mechanism":"PLAIN","username":"gw","password":"kafka-sasl-password"}}`)
	sub.TargetURL = "kafka://kafka.example:9092/orders"
	sub.Secrets = []subscription.Secret{{Value: "whsec_bmV3LXNlYWxlZA=="}, {Value: "whsec_b2xkLXNlYWxlZA==", ExpiresAt: new(now.Add(time.Hour))}}
	task := b.newJob(func(j *dispatch.Job) {
		j.Kind, j.SubscriptionID, j.Subscription, j.MessageGroup = dispatch.KindTask, "", "", ""
		j.Secret = "whsec_dGFzay1zZWFsZWQ="
		j.Auth = &endpoint.Auth{Type: endpoint.AuthBearer, Token: "task-bearer-token"}
		j.TLS = &endpoint.TLS{ClientCertificate: "client-cert-pem", ClientKey: "client-key-pem-of-task"}
	})
	ev := b.newJob(func(j *dispatch.Job) { j.Secret = "" })
	return &sealedFixture{
		sub: sub, task: task, eventJob: ev, secretsCount: 8,
		everySecretText: []string{
			"oauth-client-secret", "client-key-pem-of-sub", "whsec_bmV3LXNlYWxlZA==", "whsec_b2xkLXNlYWxlZA==",
			"whsec_dGFzay1zZWFsZWQ=", "task-bearer-token", "client-key-pem-of-task", "kafka-sasl-password",
		},
	}
}

// insert stores the fixture in st.
func (f *sealedFixture) insert(t *testing.T, st Store) {
	t.Helper()
	ctx := t.Context()
	require.NoError(t, st.SubscriptionInsert(ctx, f.sub))
	require.NoError(t, st.JobInsertMany(ctx, &dispatch.JobInsertManyParams{Jobs: []*dispatch.Job{f.task, f.eventJob}}))
}

// requireReads checks that every read of st returns the fixture with its
// secrets in plain text.
func (f *sealedFixture) requireReads(t *testing.T, st Store) {
	t.Helper()
	ctx := t.Context()
	got, err := st.SubscriptionGetByID(ctx, f.sub.ID)
	require.NoError(t, err)
	require.Equal(t, f.sub, got)
	all, err := st.SubscriptionListAll(ctx)
	require.NoError(t, err)
	require.Equal(t, []*subscription.Subscription{f.sub}, all)
	page, err := st.SubscriptionList(ctx, &subscription.ListParams{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []*subscription.Subscription{f.sub}, page.Subscriptions)

	job, err := st.JobGetByID(ctx, f.task.ID)
	require.NoError(t, err)
	require.Equal(t, f.task, job)
	many, err := st.JobGetMany(ctx, []string{f.task.ID, f.eventJob.ID})
	require.NoError(t, err)
	require.ElementsMatch(t, []*dispatch.Job{f.task, f.eventJob}, many)
	jobs, err := st.JobList(ctx, &dispatch.JobListParams{Limit: 10})
	require.NoError(t, err)
	require.ElementsMatch(t, []*dispatch.Job{f.task, f.eventJob}, jobs.Jobs)
	due, err := st.JobListDue(ctx, &dispatch.JobListDueParams{Status: dispatch.StatusQueued, Now: baseTime().Add(time.Hour), Limit: 10})
	require.NoError(t, err)
	require.ElementsMatch(t, []*dispatch.Job{f.task, f.eventJob}, due)
}

// requireUnreadable checks that st refuses the fixture's secrets with an
// error wrapping want, and quotes none of them.
func (f *sealedFixture) requireUnreadable(t *testing.T, st Store, want error) {
	t.Helper()
	ctx := t.Context()
	_, err := st.SubscriptionGetByID(ctx, f.sub.ID)
	f.requireRefused(t, err, want)
	_, err = st.SubscriptionListAll(ctx)
	f.requireRefused(t, err, want)
	_, err = st.JobGetByID(ctx, f.task.ID)
	f.requireRefused(t, err, want)
	_, err = st.JobList(ctx, &dispatch.JobListParams{Limit: 10})
	f.requireRefused(t, err, want)
	ev, err := st.JobGetByID(ctx, f.eventJob.ID)
	require.NoError(t, err, "a job without secrets reads without a key")
	require.Equal(t, f.eventJob, ev)
	_, err = st.SecretSealAll(ctx)
	f.requireRefused(t, err, want)
}

func (f *sealedFixture) requireRefused(t *testing.T, err, want error) {
	t.Helper()
	require.ErrorIs(t, err, want)
	for _, s := range f.everySecretText {
		require.NotContains(t, err.Error(), s)
	}
}

func testSealedRoundTrip(t *testing.T, h SealedHarness) {
	ns := h.NewNamespace(t)
	st := h.Open(t, ns, testBox(t, 1))
	f := newSealedFixture(idgen.New(baseTime))
	f.insert(t, st)
	f.requireReads(t, st)
	census, err := st.SecretSealAll(t.Context())
	require.NoError(t, err)
	require.Equal(t, secretbox.Census{Sealed: f.secretsCount}, census, "every secret was written sealed")

	// Updates seal too, and change nothing else.
	ctx := t.Context()
	f.sub.Auth.ClientSecret = "rotated-client-secret"
	f.sub.UpdatedAt = baseTime().Add(time.Minute)
	require.NoError(t, st.SubscriptionUpdate(ctx, f.sub))
	f.task.AttemptCount, f.task.LastError = 1, new("HTTP 503")
	require.NoError(t, st.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: f.task}))
	require.Equal(t, int64(2), f.task.Version)
	require.Equal(t, "task-bearer-token", f.task.Auth.Token, "the caller's job keeps its plain secrets")
	f.requireReads(t, st)
	require.NoError(t, st.Close())
	f.requireReads(t, h.Open(t, ns, testBox(t, 1)))
}

func testSealedAtRest(t *testing.T, h SealedHarness) {
	ns := h.NewNamespace(t)
	st := h.Open(t, ns, testBox(t, 1))
	f := newSealedFixture(idgen.New(baseTime))
	f.insert(t, st)
	require.NoError(t, st.Close())

	// The same namespace without the key, or with another, cannot read
	// the secrets: they are sealed at rest.
	keyless := h.Open(t, ns, nil)
	f.requireUnreadable(t, keyless, secretbox.ErrNoKey)
	f.requireUnreadable(t, h.Open(t, ns, testBox(t, 2)), secretbox.ErrWrongKey)
	// What holds no secret still works without the key.
	pool := &pool.Pool{ID: "pool-sealed", Code: "sealed", Name: "sealed", Burst: 1, Concurrency: 1, CreatedAt: baseTime(), UpdatedAt: baseTime()}
	require.NoError(t, keyless.PoolInsert(t.Context(), pool))
}

func testSealedMigration(t *testing.T, h SealedHarness) {
	ns := h.NewNamespace(t)
	ctx := t.Context()
	plain := h.Open(t, ns, nil)
	f := newSealedFixture(idgen.New(baseTime))
	f.insert(t, plain)
	f.requireReads(t, plain)
	census, err := plain.SecretSealAll(ctx)
	require.NoError(t, err)
	require.Equal(t, secretbox.Census{Plain: f.secretsCount}, census, "no key: counted, left plain")
	census, err = plain.SecretSealAll(ctx)
	require.NoError(t, err)
	require.Equal(t, secretbox.Census{Plain: f.secretsCount}, census)
	require.NoError(t, plain.Close())

	keyed := h.Open(t, ns, testBox(t, 1))
	f.requireReads(t, keyed) // plain values read as they are
	census, err = keyed.SecretSealAll(ctx)
	require.NoError(t, err)
	require.Equal(t, secretbox.Census{Plain: f.secretsCount}, census, "sealed when the key is first set")
	census, err = keyed.SecretSealAll(ctx)
	require.NoError(t, err)
	require.Equal(t, secretbox.Census{Sealed: f.secretsCount}, census, "nothing left plain")
	f.requireReads(t, keyed)
	job, err := keyed.JobGetByID(ctx, f.task.ID)
	require.NoError(t, err)
	require.Equal(t, int64(1), job.Version, "the migration keeps the job's version")
	require.NoError(t, keyed.Close())

	f.requireUnreadable(t, h.Open(t, ns, nil), secretbox.ErrNoKey)
	_, err = h.Open(t, ns, testBox(t, 2)).SecretSealAll(ctx)
	require.ErrorIs(t, err, secretbox.ErrWrongKey)
}
