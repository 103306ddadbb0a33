package pool_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/dispatch/pool"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/store"
)

func newService(t *testing.T, usedBy pool.UsersFunc, changed *[]string) (*pool.Service, *sqlitestore.Store) {
	t.Helper()
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: filepath.Join(t.TempDir(), "h.db")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	ids := idgen.New(time.Now)
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	return pool.NewService(pool.Config{
		Store: st, UsedByFunc: usedBy, NewIDFunc: ids.New, NowFunc: func() time.Time { return now },
		OnChangeFunc: func(id string) { *changed = append(*changed, id) },
	}), st
}

func TestCreateFillsDefaultsAndValidates(t *testing.T) {
	t.Parallel()
	var changed []string
	svc, st := newService(t, nil, &changed)
	ctx := t.Context()

	p, err := svc.Create(ctx, &pool.Input{Code: new("slow")})
	require.NoError(t, err)
	require.Equal(t, "slow", p.Name, "the name defaults to the code")
	require.Equal(t, pool.BurstDefault, p.Burst)
	require.Equal(t, pool.ConcurrencyDefault, p.Concurrency)
	require.Nil(t, p.RatePerSecond)
	stored, err := st.PoolGetByID(ctx, p.ID)
	require.NoError(t, err)
	require.Equal(t, p.Code, stored.Code)

	_, err = svc.Create(ctx, &pool.Input{Code: new("a b"), RateGiven: true, RatePerSecond: new(0.0), Burst: new(0), Concurrency: new(pool.ConcurrencyMax + 1)})
	var rej *pool.Rejection
	require.ErrorAs(t, err, &rej)
	var pointers []string
	for _, e := range rej.Errors {
		pointers = append(pointers, e.Pointer)
	}
	require.Equal(t, []string{"/code", "/ratePerSecond", "/burst", "/concurrency"}, pointers)

	_, err = svc.Create(ctx, &pool.Input{Code: new("slow")})
	var conf *pool.Conflict
	require.ErrorAs(t, err, &conf, "a taken code")
	require.ErrorIs(t, err, store.ErrConflict)
	require.Empty(t, changed, "creating a pool changes no running limiter")
}

func TestPatchKeepsTheDefaultPoolsCodeAndClearsTheRate(t *testing.T) {
	t.Parallel()
	var changed []string
	svc, _ := newService(t, nil, &changed)
	ctx := t.Context()
	def, err := svc.Create(ctx, &pool.Input{Code: new(pool.DefaultPoolCode)})
	require.NoError(t, err)

	_, err = svc.Patch(ctx, def.ID, &pool.Input{Code: new("other")})
	var conf *pool.Conflict
	require.ErrorAs(t, err, &conf)

	p, err := svc.Create(ctx, &pool.Input{Code: new("limited"), RateGiven: true, RatePerSecond: new(5.0)})
	require.NoError(t, err)
	p, err = svc.Patch(ctx, p.ID, &pool.Input{Concurrency: new(3)})
	require.NoError(t, err)
	require.InDelta(t, 5.0, *p.RatePerSecond, 0, "a patch without ratePerSecond keeps it")
	require.Equal(t, 3, p.Concurrency)
	p, err = svc.Patch(ctx, p.ID, &pool.Input{RateGiven: true})
	require.NoError(t, err)
	require.Nil(t, p.RatePerSecond, "an explicit null removes the limit")
	require.Equal(t, []string{p.ID, p.ID}, changed, "each change reaches the router's limiters")

	_, err = svc.Patch(ctx, "nope", &pool.Input{})
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestDeleteRefusesTheDefaultAndAPoolInUse(t *testing.T) {
	t.Parallel()
	var changed []string
	inUse := map[string]string{}
	usedBy := func(_ context.Context, id string) (string, error) {
		if id == "broken" {
			return "", errors.New("index down")
		}
		return inUse[id], nil
	}
	svc, st := newService(t, usedBy, &changed)
	ctx := t.Context()
	def, err := svc.Create(ctx, &pool.Input{Code: new(pool.DefaultPoolCode)})
	require.NoError(t, err)
	var conf *pool.Conflict
	require.ErrorAs(t, svc.Delete(ctx, def.ID), &conf)

	p, err := svc.Create(ctx, &pool.Input{Code: new("busy")})
	require.NoError(t, err)
	inUse[p.ID] = "orders"
	err = svc.Delete(ctx, p.ID)
	require.ErrorAs(t, err, &conf)
	require.Contains(t, conf.Detail, `"orders"`)
	_, err = st.PoolGetByID(ctx, p.ID)
	require.NoError(t, err, "a pool in use stays")

	delete(inUse, p.ID)
	require.NoError(t, svc.Delete(ctx, p.ID))
	_, err = st.PoolGetByID(ctx, p.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Equal(t, []string{p.ID}, changed)
	require.ErrorIs(t, svc.Delete(ctx, p.ID), store.ErrNotFound)
}
