package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/stream"
)

func testStatusEvent(t *testing.T, newStore NewStoreFunc) {
	t.Helper()

	t.Run("InsertIsIdempotentAndRoundTrips", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		e1 := b.statusEvent(stream.TypeDispatchFailed, "job-1", baseTime())
		e2 := b.statusEvent(stream.TypeEventAccepted, "ev-1", baseTime())
		e2.Data = stream.Data{EventID: "ev-1", EventType: "order.created", Subscriptions: []string{"a", "b"}}
		require.NoError(t, b.store.StatusEventInsertMany(b.ctx, []stream.Event{e1, e2}))

		changed := e1
		changed.Type = stream.TypeDispatchCompleted
		e3 := b.statusEvent(stream.TypeDispatchCompleted, "job-1", baseTime())
		require.NoError(t, b.store.StatusEventInsertMany(b.ctx, []stream.Event{changed, e3}), "a stored id is skipped")

		got, err := b.store.StatusEventListAfter(b.ctx, &stream.ListAfterParams{Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []stream.Event{e1, e2, e3}, got)
	})

	t.Run("ListAfter", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		var all []stream.Event
		for i := range 8 {
			// Ids ascend with time, except the last two, whose times are
			// earlier: Since filters on Time, AfterID on id.
			at := baseTime().Add(time.Duration(i) * time.Second)
			if i >= 6 {
				at = baseTime().Add(-time.Hour)
			}
			all = append(all, b.statusEvent(stream.TypeDispatchQueued, name("job-%d", i%3), at))
		}
		require.NoError(t, b.store.StatusEventInsertMany(b.ctx, reversed(all)))

		tests := []struct {
			name string
			p    stream.ListAfterParams
			want []stream.Event
		}{
			{"All", stream.ListAfterParams{Limit: 100}, all},
			{"Limit", stream.ListAfterParams{Limit: 3}, all[:3]},
			{"AfterID", stream.ListAfterParams{AfterID: all[4].ID, Limit: 100}, all[5:]},
			{"AfterIDLimit", stream.ListAfterParams{AfterID: all[1].ID, Limit: 2}, all[2:4]},
			{"AfterLast", stream.ListAfterParams{AfterID: all[7].ID, Limit: 100}, nil},
			{"SinceInclusive", stream.ListAfterParams{Since: all[2].Time, Limit: 100}, all[2:6]},
			{"SinceAndAfterID", stream.ListAfterParams{Since: all[2].Time, AfterID: all[3].ID, Limit: 100}, all[4:6]},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				got, err := b.store.StatusEventListAfter(b.ctx, &tt.p)
				require.NoError(t, err)
				require.Equal(t, statusEventIDs(tt.want), statusEventIDs(got))
			})
		}
	})

	t.Run("ListBySubject", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		a1 := b.statusEvent(stream.TypeDispatchCreated, "job-a", baseTime())
		other := b.statusEvent(stream.TypeDispatchCreated, "job-b", baseTime())
		a2 := b.statusEvent(stream.TypeDispatchCompleted, "job-a", baseTime().Add(-time.Minute))
		require.NoError(t, b.store.StatusEventInsertMany(b.ctx, []stream.Event{a2, other, a1}))

		got, err := b.store.StatusEventListBySubject(b.ctx, "job-a")
		require.NoError(t, err)
		require.Equal(t, []stream.Event{a1, a2}, got, "ascending id")
		got, err = b.store.StatusEventListBySubject(b.ctx, "job-c")
		require.NoError(t, err)
		require.Empty(t, got)
	})

	t.Run("DeleteBefore", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		var all []stream.Event
		for i := range 6 {
			all = append(all, b.statusEvent(stream.TypeDispatchQueued, "job", baseTime().Add(time.Duration(i)*time.Second)))
		}
		require.NoError(t, b.store.StatusEventInsertMany(b.ctx, all))
		before := all[4].Time // 0..3 are older; 4 is not older than itself

		n, err := b.store.StatusEventDeleteBefore(b.ctx, before, 3)
		require.NoError(t, err)
		require.Equal(t, 3, n)
		n, err = b.store.StatusEventDeleteBefore(b.ctx, before, 3)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		n, err = b.store.StatusEventDeleteBefore(b.ctx, before, 3)
		require.NoError(t, err)
		require.Zero(t, n)

		got, err := b.store.StatusEventListBySubject(b.ctx, "job")
		require.NoError(t, err)
		require.Equal(t, all[4:], got)
	})
}
