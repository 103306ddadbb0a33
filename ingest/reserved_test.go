package ingest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/ingest"
)

// The "hooklane." type prefix and the "/hooklane" source belong to the
// gateway's operational events: a producer (any key: Ingest is the door of
// POST /api/events) posting either gets 422 at /type or /source (in a batch
// /i/type, /i/source) and nothing is stored; the gateway's door, a Go
// call, still ingests them.
func TestReservedTypeAndSourceAreTheGateways(t *testing.T) {
	t.Parallel()
	b := setupService(t)
	ctx := context.Background()
	now := b.clock.Now()
	require.NoError(t, b.store.EventTypeInsert(ctx, &schema.EventType{
		Code: "hooklane.subscription.circuit.opened", Name: "x", Status: schema.TypeCurrent, CreatedAt: now, UpdatedAt: now,
	}))
	b.registry.Invalidate()
	forged := func(id, typ, src string) cloudevent.Event {
		return cloudevent.Event{SpecVersion: "1.0", ID: id, Source: src, Type: typ, Data: []byte(`{}`)}
	}
	tests := []struct {
		name     string
		req      *ingest.Request
		pointers []string
	}{
		{"type", &ingest.Request{Mode: ingest.ModeStructured, Events: []cloudevent.Event{
			forged("f-1", "hooklane.subscription.circuit.opened", "/shop"),
		}}, []string{"/type"}},
		{"type in another case", &ingest.Request{Mode: ingest.ModeBinary, Events: []cloudevent.Event{
			forged("f-2", "HookLane.subscription.circuit.opened", "/shop"),
		}}, []string{"/type"}},
		{"source", &ingest.Request{Mode: ingest.ModeStructured, Events: []cloudevent.Event{
			forged("f-3", "shop.order.created", "/hooklane"),
		}}, []string{"/source"}},
		{"source below", &ingest.Request{Mode: ingest.ModeStructured, Events: []cloudevent.Event{
			forged("f-4", "shop.order.created", "/hooklane/ops"),
		}}, []string{"/source"}},
		{"both, in a batch", &ingest.Request{Mode: ingest.ModeBatch, Events: []cloudevent.Event{
			orderEvent(), forged("f-5", "hooklane.subscription.circuit.opened", "/hooklane"),
		}}, []string{"/1/type", "/1/source"}},
	}
	for _, tt := range tests {
		_, err := b.svc.Ingest(ctx, tt.req)
		var ierr *ingest.Error
		require.ErrorAs(t, err, &ierr, tt.name)
		require.Equal(t, 422, ierr.Status, tt.name)
		var pointers []string
		for _, v := range ierr.Violations {
			pointers = append(pointers, v.Pointer)
		}
		require.Equal(t, tt.pointers, pointers, tt.name)
	}
	pg, err := b.store.EventList(ctx, &event.ListParams{Limit: 100})
	require.NoError(t, err)
	require.Empty(t, pg.Events, "nothing of a refused request is stored")

	// Names that only look alike are the producers'.
	res, err := b.svc.Ingest(ctx, &ingest.Request{Mode: ingest.ModeStructured, Events: []cloudevent.Event{
		forged("ok-1", "shop.order.created", "/hooklanes"),
	}})
	require.NoError(t, err)
	require.Len(t, res, 1)

	// The gateway's own door ingests its operational events.
	res, err = b.svc.Gateway().Ingest(ctx, &ingest.Request{Mode: ingest.ModeBatch, Events: []cloudevent.Event{
		forged("op-1", "hooklane.subscription.circuit.opened", "/hooklane"),
	}})
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.Equal(t, "/hooklane", res[0].Event.Event.Source)
}
