package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/store"
)

// newEventType returns a current event type with two schema versions.
func newEventType(code string) *schema.EventType {
	return &schema.EventType{
		Code:        code,
		Name:        "Type " + code,
		Description: "an event type",
		Status:      schema.TypeCurrent,
		Versions: []schema.Version{
			{
				Version: "1.0", SchemaType: "JSON_SCHEMA", MimeType: "application/schema+json",
				Schema: json.RawMessage(`{"type":"object","required":["id"]}`),
				Status: schema.VersionDeprecated, CreatedAt: baseTime(), UpdatedAt: baseTime().Add(time.Hour),
			},
			{
				Version: "1.1", SchemaType: "JSON_SCHEMA", MimeType: "application/schema+json",
				Schema: json.RawMessage(`{"type":"object"}`),
				Status: schema.VersionCurrent, CreatedAt: baseTime(), UpdatedAt: baseTime(),
			},
		},
		CreatedAt: baseTime(),
		UpdatedAt: baseTime(),
	}
}

func (b *testBundle) eventTypeGeneration(t *testing.T) int64 {
	t.Helper()
	g, err := b.store.EventTypeGeneration(b.ctx)
	require.NoError(t, err)
	return g
}

func testEventType(t *testing.T, newStore NewStoreFunc) {
	t.Helper()

	t.Run("InsertGet", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		et := newEventType("order.created")
		require.NoError(t, b.store.EventTypeInsert(b.ctx, et))
		require.Equal(t, int64(1), et.Revision, "insert sets the revision on the passed type")
		got, err := b.store.EventTypeGet(b.ctx, "order.created")
		require.NoError(t, err)
		require.Equal(t, et, got)

		bare := &schema.EventType{Code: "bare", Status: schema.TypeArchive, CreatedAt: baseTime(), UpdatedAt: baseTime()}
		require.NoError(t, b.store.EventTypeInsert(b.ctx, bare))
		got, err = b.store.EventTypeGet(b.ctx, "bare")
		require.NoError(t, err)
		require.Equal(t, bare, got)

		require.ErrorIs(t, b.store.EventTypeInsert(b.ctx, newEventType("order.created")), store.ErrConflict)
		_, err = b.store.EventTypeGet(b.ctx, "missing")
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("UpdateRevision", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		et := newEventType("order.created")
		require.NoError(t, b.store.EventTypeInsert(b.ctx, et))
		stale := *et

		et.Status = schema.TypeArchive
		et.Versions = et.Versions[:1]
		et.UpdatedAt = baseTime().Add(time.Hour)
		require.NoError(t, b.store.EventTypeUpdate(b.ctx, et))
		require.Equal(t, int64(2), et.Revision)
		got, err := b.store.EventTypeGet(b.ctx, et.Code)
		require.NoError(t, err)
		require.Equal(t, et, got)

		stale.Name = "lost update"
		require.ErrorIs(t, b.store.EventTypeUpdate(b.ctx, &stale), store.ErrStale)
		require.Equal(t, int64(1), stale.Revision)
		got, err = b.store.EventTypeGet(b.ctx, et.Code)
		require.NoError(t, err)
		require.Equal(t, et, got, "a refused update changes nothing")

		missing := newEventType("missing")
		missing.Revision = 1
		require.ErrorIs(t, b.store.EventTypeUpdate(b.ctx, missing), store.ErrNotFound)
	})

	t.Run("DeleteAndGeneration", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		g0 := b.eventTypeGeneration(t)
		et := newEventType("order.created")
		require.NoError(t, b.store.EventTypeInsert(b.ctx, et))
		g1 := b.eventTypeGeneration(t)
		require.Greater(t, g1, g0, "insert")
		require.Equal(t, g1, b.eventTypeGeneration(t), "reads do not change it")
		require.NoError(t, b.store.EventTypeUpdate(b.ctx, et))
		g2 := b.eventTypeGeneration(t)
		require.Greater(t, g2, g1, "update")
		require.NoError(t, b.store.EventTypeDelete(b.ctx, et.Code))
		require.Greater(t, b.eventTypeGeneration(t), g2, "delete")

		_, err := b.store.EventTypeGet(b.ctx, et.Code)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.ErrorIs(t, b.store.EventTypeDelete(b.ctx, et.Code), store.ErrNotFound)
		fresh := newEventType("order.created")
		require.NoError(t, b.store.EventTypeInsert(b.ctx, fresh), "a deleted code is free again")
		require.Equal(t, int64(1), fresh.Revision)
	})

	t.Run("List", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		codes := []string{"order.paid", "billing.sent", "order.created", "order.archived", "orders.x", "audit.log"}
		for _, c := range codes {
			et := newEventType(c)
			if c == "order.archived" || c == "audit.log" {
				et.Status = schema.TypeArchive
			}
			require.NoError(t, b.store.EventTypeInsert(b.ctx, et))
		}
		codesOf := func(types []*schema.EventType) []string {
			out := make([]string, len(types))
			for i, et := range types {
				out[i] = et.Code
			}
			return out
		}
		collect := func(p schema.ListParams) []string {
			var got []string
			for pages := 0; ; pages++ {
				require.Less(t, pages, 20, "pagination does not end")
				page, err := b.store.EventTypeList(b.ctx, &p)
				require.NoError(t, err)
				require.LessOrEqual(t, len(page.EventTypes), p.Limit)
				got = append(got, codesOf(page.EventTypes)...)
				if page.NextCursor == "" {
					return got
				}
				p.Cursor = page.NextCursor
			}
		}
		tests := []struct {
			name string
			p    schema.ListParams
			want []string
		}{
			{"All", schema.ListParams{Limit: 100}, []string{"audit.log", "billing.sent", "order.archived", "order.created", "order.paid", "orders.x"}},
			{"Pages", schema.ListParams{Limit: 4}, []string{"audit.log", "billing.sent", "order.archived", "order.created", "order.paid", "orders.x"}},
			{"PagesOfOne", schema.ListParams{Limit: 1}, []string{"audit.log", "billing.sent", "order.archived", "order.created", "order.paid", "orders.x"}},
			{"Status", schema.ListParams{Status: schema.TypeArchive, Limit: 100}, []string{"audit.log", "order.archived"}},
			{"Prefix", schema.ListParams{Prefix: "order.", Limit: 2}, []string{"order.archived", "order.created", "order.paid"}},
			{"PrefixStatus", schema.ListParams{Prefix: "order", Status: schema.TypeCurrent, Limit: 100}, []string{"order.created", "order.paid", "orders.x"}},
			{"PrefixNone", schema.ListParams{Prefix: "zzz", Limit: 100}, nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				require.Equal(t, tt.want, collect(tt.p))
			})
		}
		page, err := b.store.EventTypeList(b.ctx, &schema.ListParams{Prefix: "order.c", Limit: 10})
		require.NoError(t, err)
		want := newEventType("order.created")
		want.Revision = 1
		require.Equal(t, []*schema.EventType{want}, page.EventTypes, "listed types carry every field")
	})
}
