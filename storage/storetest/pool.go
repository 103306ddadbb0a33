package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch/pool"
	"github.com/hooklane/hooklane/store"
)

func (b *testBundle) newPool(code string) *pool.Pool {
	return &pool.Pool{
		ID:            b.ids.New(),
		Code:          code,
		Name:          "Pool " + code,
		RatePerSecond: new(12.5),
		Burst:         20,
		Concurrency:   8,
		CreatedAt:     baseTime(),
		UpdatedAt:     baseTime(),
	}
}

func testPool(t *testing.T, newStore NewStoreFunc) {
	t.Helper()

	t.Run("InsertGetList", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		pb := b.newPool("bravo")
		pa := b.newPool("alpha")
		pa.RatePerSecond = nil
		pc := b.newPool("charlie")
		for _, p := range []*pool.Pool{pb, pa, pc} {
			require.NoError(t, b.store.PoolInsert(b.ctx, p))
		}
		got, err := b.store.PoolGetByID(b.ctx, pa.ID)
		require.NoError(t, err)
		require.Equal(t, pa, got)
		got, err = b.store.PoolGetByCode(b.ctx, "bravo")
		require.NoError(t, err)
		require.Equal(t, pb, got)
		list, err := b.store.PoolList(b.ctx)
		require.NoError(t, err)
		require.Equal(t, []*pool.Pool{pa, pb, pc}, list, "ordered by code")

		_, err = b.store.PoolGetByID(b.ctx, "missing")
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = b.store.PoolGetByCode(b.ctx, "missing")
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("InsertDuplicateCode", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		first := b.newPool("dup")
		require.NoError(t, b.store.PoolInsert(b.ctx, first))
		require.ErrorIs(t, b.store.PoolInsert(b.ctx, b.newPool("dup")), store.ErrConflict)
		list, err := b.store.PoolList(b.ctx)
		require.NoError(t, err)
		require.Equal(t, []*pool.Pool{first}, list)
	})

	t.Run("Update", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		p := b.newPool("one")
		other := b.newPool("two")
		require.NoError(t, b.store.PoolInsert(b.ctx, p))
		require.NoError(t, b.store.PoolInsert(b.ctx, other))

		upd := *p
		upd.Code = "uno"
		upd.Concurrency = 99
		upd.RatePerSecond = nil
		upd.UpdatedAt = baseTime().Add(time.Hour)
		require.NoError(t, b.store.PoolUpdate(b.ctx, &upd))
		got, err := b.store.PoolGetByID(b.ctx, p.ID)
		require.NoError(t, err)
		require.Equal(t, &upd, got)
		_, err = b.store.PoolGetByCode(b.ctx, "one")
		require.ErrorIs(t, err, store.ErrNotFound)

		clash := upd
		clash.Code = "two"
		require.ErrorIs(t, b.store.PoolUpdate(b.ctx, &clash), store.ErrConflict)
		got, err = b.store.PoolGetByID(b.ctx, p.ID)
		require.NoError(t, err)
		require.Equal(t, &upd, got, "a refused update changes nothing")

		missing := b.newPool("three")
		require.ErrorIs(t, b.store.PoolUpdate(b.ctx, missing), store.ErrNotFound)
	})

	t.Run("Delete", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		p := b.newPool("gone")
		keep := b.newPool("kept")
		require.NoError(t, b.store.PoolInsert(b.ctx, p))
		require.NoError(t, b.store.PoolInsert(b.ctx, keep))
		require.NoError(t, b.store.PoolDelete(b.ctx, p.ID))
		_, err := b.store.PoolGetByID(b.ctx, p.ID)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.ErrorIs(t, b.store.PoolDelete(b.ctx, p.ID), store.ErrNotFound)
		list, err := b.store.PoolList(b.ctx)
		require.NoError(t, err)
		require.Equal(t, []*pool.Pool{keep}, list)
		require.NoError(t, b.store.PoolInsert(b.ctx, b.newPool("gone")), "a deleted pool's code is free again")
	})
}
