package subscription_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/dispatch/pool"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/subscription"
)

// fakeJobs records what the Service asks of the job lifecycle.
type fakeJobs struct {
	mu         sync.Mutex
	released   []string
	resets     []string
	cancelled  []string
	reasons    []string
	releaseErr error
	cancelErr  error
}

func (f *fakeJobs) ReleaseSubscription(_ context.Context, id string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, id)
	return 1, f.releaseErr
}

func (f *fakeJobs) ResetCircuit(_ context.Context, id, code string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resets = append(f.resets, id+" "+code)
	return nil
}

func (f *fakeJobs) CancelSubscription(_ context.Context, id, reason string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancelled = append(f.cancelled, id)
	f.reasons = append(f.reasons, reason)
	return 1, f.cancelErr
}

// syncBuffer is a log sink safe for the handler's writes and the test's
// reads; every line is also sent to t.Log.
type syncBuffer struct {
	t  *testing.T
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.t.Log(string(p))
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p) //nolint:wrapcheck // bytes.Buffer never fails
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type serviceBundle struct {
	svc     *subscription.Service
	store   *sqlitestore.Store
	jobs    *fakeJobs
	changes *atomic.Int32
	log     *syncBuffer
	// public is what PublicHostFunc answers for every host.
	public    atomic.Bool
	publicErr error
	mu        sync.Mutex
	now       time.Time
}

func (b *serviceBundle) clock() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.now
}

func (b *serviceBundle) advance(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.now = b.now.Add(d)
}

// setupService builds a Service over a real SQLite store holding the pool
// "pool-1". withAddressCheck sets a PublicHostFunc (answering b.public).
func setupService(t *testing.T, withAddressCheck bool) *serviceBundle {
	t.Helper()
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: filepath.Join(t.TempDir(), "h.db")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	now := time.Date(2026, 1, 24, 14, 0, 0, 123_456_789, time.UTC)
	require.NoError(t, st.PoolInsert(t.Context(), &pool.Pool{ID: "pool-1", Code: "p1", Name: "P1", Burst: 1, Concurrency: 1, CreatedAt: now, UpdatedAt: now}))
	b := &serviceBundle{store: st, jobs: &fakeJobs{}, changes: &atomic.Int32{}, log: &syncBuffer{t: t}, now: now}
	b.public.Store(true)
	cfg := subscription.ServiceConfig{
		Store: st, Jobs: b.jobs, NewIDFunc: idgen.New(nil).New,
		OnChangeFunc: func() { b.changes.Add(1) },
		Logger:       slog.New(slog.NewTextHandler(b.log, nil)),
		NowFunc:      b.clock,
	}
	if withAddressCheck {
		cfg.PublicHostFunc = func(context.Context, string) (bool, error) { return b.public.Load(), b.publicErr }
	}
	b.svc = subscription.NewService(cfg)
	return b
}

// newSub returns a valid push subscription as the API decodes a request:
// over the defaults.
func newSub(code string, bindings ...string) *subscription.Subscription {
	s := &subscription.Subscription{}
	s.ApplyDefaults()
	s.Code, s.Target = code, "https://example.com/hook"
	for _, c := range bindings {
		s.EventTypes = append(s.EventTypes, subscription.Binding{EventTypeCode: c})
	}
	return s
}

func requireFieldErrors(t *testing.T, err error, want ...subscription.FieldError) *subscription.Rejection {
	t.Helper()
	var rej *subscription.Rejection
	require.ErrorAs(t, err, &rej)
	require.Equal(t, want, rej.Errors)
	return rej
}

func TestServiceCreateChecks(t *testing.T) {
	t.Parallel()
	const nonPublic = "resolves to a loopback, private or otherwise non-public address"
	missingPool, pool := "nope", "pool-1"
	tests := []struct {
		name      string
		edit      func(*subscription.Subscription)
		check     bool
		public    bool
		publicErr error
		want      []subscription.FieldError
	}{
		{name: "valid", edit: func(*subscription.Subscription) {}, check: true, public: true},
		{name: "valid in an existing pool", edit: func(s *subscription.Subscription) { s.DispatchPoolID = &pool }, check: true, public: true},
		{
			name: "no pool with that id", edit: func(s *subscription.Subscription) { s.DispatchPoolID = &missingPool }, check: true, public: true,
			want: []subscription.FieldError{{Pointer: "/dispatchPoolId", Message: "no dispatch pool has this id"}},
		},
		{
			name: "non-public target", edit: func(*subscription.Subscription) {}, check: true, public: false,
			want: []subscription.FieldError{{Pointer: "/target", Message: nonPublic}},
		},
		{
			name: "unresolvable target", edit: func(*subscription.Subscription) {}, check: true, publicErr: errors.New("no such host"),
			want: []subscription.FieldError{{Pointer: "/target", Message: "host could not be resolved"}},
		},
		{name: "no address check without PublicHostFunc", edit: func(*subscription.Subscription) {}, check: false},
		{
			name: "address not checked when invalid otherwise", edit: func(s *subscription.Subscription) { s.Code = "" }, check: true, public: false,
			want: []subscription.FieldError{{Pointer: "/code", Message: "is required"}},
		},
		{name: "every problem at once", edit: func(s *subscription.Subscription) {
			s.EventTypes, s.DispatchPoolID, s.TimeoutSeconds = nil, &missingPool, 0
		}, check: true, public: true, want: []subscription.FieldError{
			{Pointer: "/eventTypes", Message: "must bind at least one event type"},
			{Pointer: "/timeoutSeconds", Message: "must be between 1 and 300"},
			{Pointer: "/dispatchPoolId", Message: "no dispatch pool has this id"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupService(t, tt.check)
			b.public.Store(tt.public)
			b.publicErr = tt.publicErr
			sub := newSub("s1", "a.b")
			tt.edit(sub)
			secret, err := b.svc.Create(t.Context(), sub, nil)
			if tt.want != nil {
				rej := requireFieldErrors(t, err, tt.want...)
				require.Equal(t, "the subscription is invalid", rej.Detail)
				require.Zero(t, b.changes.Load())
				return
			}
			require.NoError(t, err)
			require.NotEmpty(t, sub.ID)
			_, err = subscription.SecretKey(secret)
			require.NoError(t, err, "a generated secret")
			got, err := b.svc.Get(t.Context(), sub.ID)
			require.NoError(t, err)
			require.Equal(t, b.now.Truncate(time.Millisecond), got.CreatedAt)
			require.Equal(t, []subscription.Secret{{Value: secret}}, got.Secrets)
			require.Equal(t, int32(1), b.changes.Load())
		})
	}
}

func TestServiceCreateSecretAndConflict(t *testing.T) {
	t.Parallel()
	b := setupService(t, false)
	ctx := t.Context()

	bad := "whsec_not base64!"
	_, err := b.svc.Create(ctx, newSub("s1", "a.b"), &bad)
	rej := requireFieldErrors(t, err, subscription.FieldError{Pointer: "/secret", Message: subscription.ErrInvalidSecret.Error()})
	require.Equal(t, "the secret is invalid", rej.Detail)

	// An invalid subscription is reported before its secret.
	invalid := newSub("", "a.b")
	_, err = b.svc.Create(ctx, invalid, &bad)
	_ = requireFieldErrors(t, err, subscription.FieldError{Pointer: "/code", Message: "is required"})

	own := subscription.NewSecret()
	got, err := b.svc.Create(ctx, newSub("s1", "a.b"), &own)
	require.NoError(t, err)
	require.Equal(t, own, got)

	_, err = b.svc.Create(ctx, newSub("s1", "c.d"), nil)
	var c *subscription.Conflict
	require.ErrorAs(t, err, &c)
	require.ErrorIs(t, err, store.ErrConflict)
	require.Equal(t, `a subscription with code "s1" exists for this client`, c.Detail)
}

func TestServicePatch(t *testing.T) {
	t.Parallel()
	b := setupService(t, true)
	ctx := t.Context()
	sub := newSub("s1", "a.b")
	_, err := b.svc.Create(ctx, sub, nil)
	require.NoError(t, err)
	other := newSub("s2", "a.b")
	_, err = b.svc.Create(ctx, other, nil)
	require.NoError(t, err)
	stored, err := b.svc.Get(ctx, sub.ID)
	require.NoError(t, err)
	b.advance(time.Minute)

	// The merge changes what it may; what it may not is restored.
	next, err := b.svc.Patch(ctx, sub.ID, func(s *subscription.Subscription) error {
		s.Name, s.Sequence = "renamed", 5
		s.ID, s.CreatedAt, s.Secrets = "other", time.Time{}, nil
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, "renamed", next.Name)
	require.Equal(t, sub.ID, next.ID)
	require.Equal(t, stored.CreatedAt, next.CreatedAt)
	require.Equal(t, b.now.Truncate(time.Millisecond), next.UpdatedAt)
	got, err := b.svc.Get(ctx, sub.ID)
	require.NoError(t, err)
	require.Equal(t, 5, got.Sequence)
	require.Equal(t, stored.Secrets, got.Secrets)

	// The result is checked as a new subscription is, the address too.
	b.public.Store(false)
	_, err = b.svc.Patch(ctx, sub.ID, func(s *subscription.Subscription) error { s.Target = "http://10.0.0.1/"; return nil })
	_ = requireFieldErrors(t, err, subscription.FieldError{Pointer: "/target", Message: "resolves to a loopback, private or otherwise non-public address"})
	b.public.Store(true)
	_, err = b.svc.Patch(ctx, sub.ID, func(s *subscription.Subscription) error { s.Retry.MaxAttempts = 0; return nil })
	_ = requireFieldErrors(t, err, subscription.FieldError{Pointer: "/retry/maxAttempts", Message: "must be between 1 and 1000"})

	// A merge error is returned as it is, and nothing is written.
	boom := errors.New("bad patch")
	_, err = b.svc.Patch(ctx, sub.ID, func(s *subscription.Subscription) error { s.Name = "x"; return boom })
	require.ErrorIs(t, err, boom)
	got, err = b.svc.Get(ctx, sub.ID)
	require.NoError(t, err)
	require.Equal(t, "renamed", got.Name)

	_, err = b.svc.Patch(ctx, sub.ID, func(s *subscription.Subscription) error { s.Code = "s2"; return nil })
	var c *subscription.Conflict
	require.ErrorAs(t, err, &c)

	called := false
	_, err = b.svc.Patch(ctx, "no-such-id", func(*subscription.Subscription) error { called = true; return nil })
	require.ErrorIs(t, err, store.ErrNotFound)
	require.False(t, called, "a missing subscription is reported before the patch is read")
}

func TestServicePauseResume(t *testing.T) {
	t.Parallel()
	b := setupService(t, false)
	ctx := t.Context()
	sub := newSub("s1", "a.b")
	_, err := b.svc.Create(ctx, sub, nil)
	require.NoError(t, err)

	got, err := b.svc.Pause(ctx, sub.ID)
	require.NoError(t, err)
	require.Equal(t, subscription.StatusPaused, got.Status)
	require.Empty(t, b.jobs.released)

	got, err = b.svc.Resume(ctx, sub.ID)
	require.NoError(t, err)
	require.Equal(t, subscription.StatusActive, got.Status)
	require.Equal(t, []string{sub.ID}, b.jobs.released)
	require.Equal(t, []string{sub.ID + " s1"}, b.jobs.resets, "resume closes the circuit")

	// A failed release leaves the subscription ACTIVE and is logged: the
	// pending poller releases the jobs later.
	b.jobs.releaseErr = errors.New("queue down")
	got, err = b.svc.Resume(ctx, sub.ID)
	require.NoError(t, err)
	require.Equal(t, subscription.StatusActive, got.Status)
	require.Contains(t, b.log.String(), "queue down")
	require.Contains(t, b.log.String(), "subscription_id="+sub.ID)

	for _, call := range []func(context.Context, string) (*subscription.Subscription, error){b.svc.Pause, b.svc.Resume} {
		_, err := call(ctx, "no-such-id")
		require.ErrorIs(t, err, store.ErrNotFound)
	}
	require.Len(t, b.jobs.released, 2, "nothing is released for a missing subscription")
}

func TestServiceDelete(t *testing.T) {
	t.Parallel()
	b := setupService(t, false)
	ctx := t.Context()
	sub := newSub("s1", "a.b")
	_, err := b.svc.Create(ctx, sub, nil)
	require.NoError(t, err)

	require.ErrorIs(t, b.svc.Delete(ctx, "no-such-id"), store.ErrNotFound)
	require.Empty(t, b.jobs.cancelled)

	changes := b.changes.Load()
	require.NoError(t, b.svc.Delete(ctx, sub.ID))
	require.Equal(t, changes+1, b.changes.Load())
	require.Equal(t, []string{sub.ID}, b.jobs.cancelled)
	require.Equal(t, []string{"subscription deleted"}, b.jobs.reasons)
	_, err = b.svc.Get(ctx, sub.ID)
	require.ErrorIs(t, err, store.ErrNotFound)

	other := newSub("s2", "a.b")
	_, err = b.svc.Create(ctx, other, nil)
	require.NoError(t, err)
	b.jobs.cancelErr = errors.New("store down")
	require.ErrorContains(t, b.svc.Delete(ctx, other.ID), "store down", "a failed cancel is the caller's to see")
}

func TestServiceRotateSecret(t *testing.T) {
	t.Parallel()
	b := setupService(t, false)
	ctx := t.Context()
	sub := newSub("s1", "a.b")
	first, err := b.svc.Create(ctx, sub, nil)
	require.NoError(t, err)

	t0 := b.clock().Truncate(time.Millisecond)
	second, expires, err := b.svc.RotateSecret(ctx, sub.ID)
	require.NoError(t, err)
	require.NotEqual(t, first, second)
	require.Equal(t, t0.Add(subscription.SecretOverlap), expires)
	secrets, err := b.svc.Secrets(ctx, sub.ID)
	require.NoError(t, err)
	require.Equal(t, []subscription.Secret{{Value: second}, {Value: first, ExpiresAt: &expires}}, secrets)

	// A second rotation within the overlap keeps the first secret's expiry.
	b.advance(time.Hour)
	third, expires2, err := b.svc.RotateSecret(ctx, sub.ID)
	require.NoError(t, err)
	require.Equal(t, t0.Add(time.Hour+subscription.SecretOverlap), expires2)
	secrets, err = b.svc.Secrets(ctx, sub.ID)
	require.NoError(t, err)
	require.Equal(t, []subscription.Secret{{Value: third}, {Value: second, ExpiresAt: &expires2}, {Value: first, ExpiresAt: &expires}}, secrets)

	// Past its expiry a secret is no longer shown, and a rotation drops it.
	b.advance(subscription.SecretOverlap - time.Hour)
	secrets, err = b.svc.Secrets(ctx, sub.ID)
	require.NoError(t, err)
	require.Equal(t, []subscription.Secret{{Value: third}, {Value: second, ExpiresAt: &expires2}}, secrets)
	fourth, _, err := b.svc.RotateSecret(ctx, sub.ID)
	require.NoError(t, err)
	stored, err := b.store.SubscriptionGetByID(ctx, sub.ID)
	require.NoError(t, err)
	require.Len(t, stored.Secrets, 3)
	require.Equal(t, fourth, stored.Secrets[0].Value)

	_, _, err = b.svc.RotateSecret(ctx, "no-such-id")
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = b.svc.Secrets(ctx, "no-such-id")
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestServiceListReceiving(t *testing.T) {
	t.Parallel()
	b := setupService(t, false)
	ctx := t.Context()
	for _, s := range []*subscription.Subscription{
		newSub("exact", "shop:order:created"),
		newSub("glob", "shop:order:*"),
		newSub("star", "shop:*:created"),
		newSub("other", "shop:order:paid"),
	} {
		_, err := b.svc.Create(ctx, s, nil)
		require.NoError(t, err)
	}
	paused := newSub("paused", "shop:*")
	_, err := b.svc.Create(ctx, paused, nil)
	require.NoError(t, err)
	_, err = b.svc.Pause(ctx, paused.ID)
	require.NoError(t, err)

	codes := func(p *subscription.ListParams) []string {
		subs, err := b.svc.ListReceiving(ctx, p)
		require.NoError(t, err)
		var out []string
		for _, s := range subs {
			out = append(out, s.Code)
		}
		return out
	}
	require.ElementsMatch(t, []string{"exact", "glob", "star", "paused"}, codes(&subscription.ListParams{EventType: "shop:order:created", Limit: 1}))
	require.ElementsMatch(t, []string{"glob", "other", "paused"}, codes(&subscription.ListParams{EventType: "shop:order:paid"}))
	require.Equal(t, []string{"paused"}, codes(&subscription.ListParams{EventType: "shop:order:created", Status: subscription.StatusPaused}))
	require.Empty(t, codes(&subscription.ListParams{EventType: "bank:account:opened"}))
}

func TestNewServicePanicsWithoutPorts(t *testing.T) {
	t.Parallel()
	require.Panics(t, func() { subscription.NewService(subscription.ServiceConfig{}) })
}

// TestServicePatchDoesNotUndoAnAutoDisable: the gateway disables the
// subscription between a PATCH's read and its write (here inside the
// merge, which runs in between). Before versions, the PATCH wrote back the
// ACTIVE status it had read; now its write is refused as stale and the
// merge runs again on a fresh read: the patch applies and the
// subscription stays PAUSED with its reason. A pause from another caller
// in between is kept the same way, and so are rotations.
func TestServicePatchDoesNotUndoAnAutoDisable(t *testing.T) {
	t.Parallel()
	b := setupService(t, true)
	ctx := t.Context()
	sub := newSub("s1", "a.b")
	_, err := b.svc.Create(ctx, sub, nil)
	require.NoError(t, err)

	merges := 0
	next, err := b.svc.Patch(ctx, sub.ID, func(s *subscription.Subscription) error {
		merges++
		if merges == 1 {
			changed, err := b.store.SubscriptionDisable(ctx, &dispatch.SubscriptionDisableParams{
				SubscriptionID: sub.ID, Reason: "every attempt failed", At: b.clock(),
			})
			require.NoError(t, err)
			require.True(t, changed)
		}
		s.Name = "renamed"
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 2, merges, "the merge ran again on a fresh read")
	require.Equal(t, "renamed", next.Name)
	require.Equal(t, subscription.StatusPaused, next.Status)
	got, err := b.svc.Get(ctx, sub.ID)
	require.NoError(t, err)
	require.Equal(t, subscription.StatusPaused, got.Status, "the auto-disable stands")
	require.NotNil(t, got.StatusReason)
	require.Equal(t, "renamed", got.Name)

	// A rotation racing a patch: both apply.
	rotations := 0
	_, err = b.svc.Patch(ctx, sub.ID, func(s *subscription.Subscription) error {
		rotations++
		if rotations == 1 {
			_, _, err := b.svc.RotateSecret(ctx, sub.ID)
			require.NoError(t, err)
		}
		s.Description = "patched after a rotation"
		return nil
	})
	require.NoError(t, err)
	secrets, err := b.svc.Secrets(ctx, sub.ID)
	require.NoError(t, err)
	require.Len(t, secrets, 2, "the rotation was not undone by the patch")
	got, err = b.svc.Get(ctx, sub.ID)
	require.NoError(t, err)
	require.Equal(t, "patched after a rotation", got.Description)
}
