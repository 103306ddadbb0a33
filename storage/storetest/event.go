package storetest

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/stream"
)

// requireEventEqual compares two stored events: Data as JSON (a store may
// re-encode it), FannedOutAt only by presence, everything else exactly.
func requireEventEqual(t *testing.T, want, got *event.Event) {
	t.Helper()
	require.NotNil(t, got)
	if want.Event.Data == nil {
		require.Nil(t, got.Event.Data)
	} else {
		require.JSONEq(t, string(want.Event.Data), string(got.Event.Data))
	}
	w, g := *want, *got
	w.Event.Data, g.Event.Data = nil, nil
	w.FannedOutAt, g.FannedOutAt = nil, nil
	require.Equal(t, w, g)
}

func testEvent(t *testing.T, newStore NewStoreFunc) {
	t.Helper()

	t.Run("IngestStoresEventJobsAndStatusEvents", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		ev := b.newEvent(nil)
		j1 := b.newJob(func(j *dispatch.Job) { j.EventID = ev.ID; j.SubscriptionID = "sub-1" })
		j2 := b.newJob(func(j *dispatch.Job) {
			j.EventID = ev.ID
			j.SubscriptionID = "sub-2"
			j.Status = dispatch.StatusPending
		})
		se := []stream.Event{
			b.statusEvent(stream.TypeEventAccepted, ev.ID, baseTime()),
			b.statusEvent(stream.TypeDispatchCreated, j1.ID, baseTime()),
			b.statusEvent(stream.TypeDispatchCreated, j2.ID, baseTime()),
		}
		res, err := b.store.EventIngest(b.ctx, &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{
			{Event: ev, Jobs: []*dispatch.Job{j1, j2}, StatusEvents: se},
		}})
		require.NoError(t, err)
		require.Equal(t, []dispatch.EventIngestResult{{}}, res)

		got, err := b.store.EventGetByID(b.ctx, ev.ID)
		require.NoError(t, err)
		requireEventEqual(t, ev, got)
		require.NotNil(t, got.FannedOutAt, "an ingested event is marked fanned out")

		jobs, err := b.store.JobListByEvent(b.ctx, ev.ID)
		require.NoError(t, err)
		require.ElementsMatch(t, []string{j1.ID, j2.ID}, jobIDs(jobs))
		for _, j := range []*dispatch.Job{j1, j2} {
			stored, err := b.store.JobGetByID(b.ctx, j.ID)
			require.NoError(t, err)
			require.Equal(t, j, stored)
		}
		for _, e := range se {
			got, err := b.store.StatusEventListBySubject(b.ctx, e.Subject)
			require.NoError(t, err)
			require.Equal(t, []stream.Event{e}, got)
		}
	})

	t.Run("IngestRoundTripsEveryField", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		full := b.newEvent(nil)
		binary := b.newEvent(func(e *event.Event) {
			e.Event.Data = nil
			e.Event.DataBase64 = []byte{0, 1, 2, 0xfe, 0xff}
			e.Event.DataContentType = "application/octet-stream"
			e.SchemaVersion = ""
		})
		bare := b.newEvent(func(e *event.Event) {
			e.Event.Subject = ""
			e.Event.Time = baseTime()
			e.Event.DataContentType = ""
			e.Event.DataSchema = ""
			e.Event.Data = nil
			e.Event.Extensions = nil
			e.SchemaVersion = ""
		})
		text := b.newEvent(func(e *event.Event) {
			e.Event.Data = []byte(`"plain text"`)
			e.Event.DataContentType = "text/plain"
			e.Event.Extensions = map[string]any{"ratio": "1.50", "big": json.Number("12345678901234567890"), "neg": json.Number("-0.25"), "off": false}
		})
		b.ingest(t, full, binary, bare, text)
		for _, want := range []*event.Event{full, binary, bare, text} {
			got, err := b.store.EventGetByID(b.ctx, want.ID)
			require.NoError(t, err)
			requireEventEqual(t, want, got)
		}
	})

	t.Run("GetByIDMissing", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		_, err := b.store.EventGetByID(b.ctx, "01J00000000000000000000000")
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("IngestDuplicateAcrossCalls", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		first := b.newEvent(nil)
		b.ingest(t, first)

		dup := b.newEvent(func(e *event.Event) { e.DedupKey = first.DedupKey })
		job := b.newJob(func(j *dispatch.Job) { j.EventID = dup.ID })
		se := b.statusEvent(stream.TypeDispatchCreated, job.ID, baseTime())
		res, err := b.store.EventIngest(b.ctx, &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{
			{Event: dup, Jobs: []*dispatch.Job{job}, StatusEvents: []stream.Event{se}},
		}})
		require.NoError(t, err)
		require.Equal(t, []dispatch.EventIngestResult{{Duplicate: true, ExistingID: first.ID}}, res)
		requireNothingOfItem(t, b, dup, job, se)
	})

	t.Run("IngestDuplicateWithinCall", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		first := b.newEvent(nil)
		other := b.newEvent(nil)
		dup := b.newEvent(func(e *event.Event) { e.DedupKey = first.DedupKey })
		job := b.newJob(func(j *dispatch.Job) { j.EventID = dup.ID })
		se := b.statusEvent(stream.TypeDispatchCreated, job.ID, baseTime())
		res, err := b.store.EventIngest(b.ctx, &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{
			{Event: first},
			{Event: other},
			{Event: dup, Jobs: []*dispatch.Job{job}, StatusEvents: []stream.Event{se}},
		}})
		require.NoError(t, err)
		require.Equal(t, []dispatch.EventIngestResult{{}, {}, {Duplicate: true, ExistingID: first.ID}}, res)
		requireNothingOfItem(t, b, dup, job, se)
		for _, e := range []*event.Event{first, other} {
			got, err := b.store.EventGetByID(b.ctx, e.ID)
			require.NoError(t, err)
			requireEventEqual(t, e, got)
		}
	})

	t.Run("List", func(t *testing.T) { t.Parallel(); testEventList(t, newStore) })
	t.Run("ListPagination", func(t *testing.T) { t.Parallel(); testEventListPagination(t, newStore) })
	t.Run("FanOut", func(t *testing.T) { t.Parallel(); testEventFanOut(t, newStore) })
	t.Run("ConcurrentIngests", func(t *testing.T) { t.Parallel(); testEventConcurrentIngests(t, newStore) })
	t.Run("DeleteBefore", func(t *testing.T) { t.Parallel(); testEventDeleteBefore(t, newStore) })
}

// requireNothingOfItem checks that nothing of a duplicate item was written.
func requireNothingOfItem(t *testing.T, b *testBundle, ev *event.Event, job *dispatch.Job, se stream.Event) {
	t.Helper()
	_, err := b.store.EventGetByID(b.ctx, ev.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = b.store.JobGetByID(b.ctx, job.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	got, err := b.store.StatusEventListBySubject(b.ctx, se.Subject)
	require.NoError(t, err)
	require.Empty(t, got)
}

func testEventList(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	b := setup(t, newStore)
	at := func(d time.Duration) time.Time { return baseTime().Add(d) }
	e0 := b.newEvent(func(e *event.Event) { e.ReceivedAt = at(0) })
	e1 := b.newEvent(func(e *event.Event) {
		e.ReceivedAt = at(time.Second)
		e.Event.Type = "order.paid"
		e.Event.Extensions = map[string]any{"messagegroup": "group-b", "tenant": "globex", "urgent": false}
	})
	e2 := b.newEvent(func(e *event.Event) {
		e.ReceivedAt = at(2 * time.Second)
		e.Event.Source = "/billing"
		e.Event.Subject = "invoice/9"
		e.Event.Extensions = nil
	})
	e3 := b.newEvent(func(e *event.Event) { e.ReceivedAt = at(3 * time.Second) })
	b.ingest(t, e0, e1, e2, e3)

	tests := []struct {
		name string
		p    event.ListParams
		want []*event.Event // newest first
	}{
		{"All", event.ListParams{}, []*event.Event{e3, e2, e1, e0}},
		{"Type", event.ListParams{Type: "order.paid"}, []*event.Event{e1}},
		{"Source", event.ListParams{Source: "/billing"}, []*event.Event{e2}},
		{"Subject", event.ListParams{Subject: "order/1"}, []*event.Event{e3, e1, e0}},
		{"MessageGroup", event.ListParams{MessageGroup: "group-a"}, []*event.Event{e3, e0}},
		{"Ext", event.ListParams{Ext: map[string]string{"tenant": "globex"}}, []*event.Event{e1}},
		{"ExtBool", event.ListParams{Ext: map[string]string{"urgent": "true"}}, []*event.Event{e3, e0}},
		{"ExtNumber", event.ListParams{Ext: map[string]string{"priority": "3"}}, []*event.Event{e3, e0}},
		{"ExtTwo", event.ListParams{Ext: map[string]string{"tenant": "acme", "urgent": "false"}}, nil},
		{"ExtMissing", event.ListParams{Ext: map[string]string{"nope": "x"}}, nil},
		{"SinceInclusive", event.ListParams{Since: at(time.Second)}, []*event.Event{e3, e2, e1}},
		{"UntilExclusive", event.ListParams{Until: at(2 * time.Second)}, []*event.Event{e1, e0}},
		{"SinceUntil", event.ListParams{Since: at(time.Second), Until: at(3 * time.Second)}, []*event.Event{e2, e1}},
		{"Combined", event.ListParams{Type: "order.created", Source: "/orders", Since: at(time.Second)}, []*event.Event{e3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := tt.p
			p.Limit = 10
			page, err := b.store.EventList(b.ctx, &p)
			require.NoError(t, err)
			require.Equal(t, eventIDs(tt.want), eventIDs(page.Events))
			require.Empty(t, page.NextCursor)
		})
	}
	page, err := b.store.EventList(b.ctx, &event.ListParams{Limit: 10})
	require.NoError(t, err)
	require.Len(t, page.Events, 4)
	requireEventEqual(t, e1, page.Events[2])
}

func testEventListPagination(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	b := setup(t, newStore)
	var all []*event.Event
	for i := range 23 {
		e := b.newEvent(func(e *event.Event) {
			e.ReceivedAt = baseTime().Add(time.Duration(i) * time.Millisecond)
			if i%2 == 0 {
				e.Event.Type = "even"
			}
		})
		all = append(all, e)
	}
	b.ingest(t, all...)

	collect := func(p event.ListParams) []string {
		var ids []string
		for pages := 0; ; pages++ {
			require.Less(t, pages, 30, "pagination does not end")
			page, err := b.store.EventList(b.ctx, &p)
			require.NoError(t, err)
			require.LessOrEqual(t, len(page.Events), p.Limit)
			ids = append(ids, eventIDs(page.Events)...)
			if page.NextCursor == "" {
				return ids
			}
			require.NotEmpty(t, page.Events)
			p.Cursor = page.NextCursor
		}
	}
	require.Equal(t, reversed(eventIDs(all)), collect(event.ListParams{Limit: 5}))
	require.Equal(t, reversed(eventIDs(all)), collect(event.ListParams{Limit: 23}))
	require.Equal(t, reversed(eventIDs(all)), collect(event.ListParams{Limit: 1}))
	var even []*event.Event
	for i, e := range all {
		if i%2 == 0 {
			even = append(even, e)
		}
	}
	require.Equal(t, reversed(eventIDs(even)), collect(event.ListParams{Type: "even", Limit: 4}))
}

func testEventFanOut(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	b := setup(t, newStore)
	var events []*event.Event
	for i := range 5 {
		events = append(events, b.newEvent(func(e *event.Event) {
			e.ReceivedAt = baseTime().Add(time.Duration(i) * time.Second)
		}))
	}
	b.ingest(t, events...)

	due, err := b.store.EventListNotFannedOut(b.ctx, &event.ListNotFannedOutParams{ReceivedBefore: baseTime().Add(time.Hour), Limit: 10})
	require.NoError(t, err)
	require.Empty(t, due, "ingested events are fanned out")

	clearer, ok := b.store.(FanOutClearer)
	require.True(t, ok, "the adapter's tests must give the store EventClearFannedOut (FanOutClearer) so fan-out recovery is tested")
	require.NoError(t, clearer.EventClearFannedOut(b.ctx, eventIDs(events)))
	got, err := b.store.EventGetByID(b.ctx, events[0].ID)
	require.NoError(t, err)
	require.Nil(t, got.FannedOutAt)

	// Received before is exclusive, oldest first, limited.
	due, err = b.store.EventListNotFannedOut(b.ctx, &event.ListNotFannedOutParams{ReceivedBefore: events[3].ReceivedAt, Limit: 2})
	require.NoError(t, err)
	require.Equal(t, eventIDs(events[:2]), eventIDs(due))
	requireEventEqual(t, events[0], due[0])

	at := baseTime().Add(time.Minute)
	require.NoError(t, b.store.EventMarkFannedOut(b.ctx, eventIDs(events[:2]), at))
	got, err = b.store.EventGetByID(b.ctx, events[1].ID)
	require.NoError(t, err)
	require.NotNil(t, got.FannedOutAt)
	require.Equal(t, at, *got.FannedOutAt)

	due, err = b.store.EventListNotFannedOut(b.ctx, &event.ListNotFannedOutParams{ReceivedBefore: baseTime().Add(time.Hour), Limit: 10})
	require.NoError(t, err)
	require.Equal(t, eventIDs(events[2:]), eventIDs(due))
}

func testEventDeleteBefore(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	b := setup(t, newStore)
	var events []*event.Event
	for i := range 6 {
		events = append(events, b.newEvent(func(e *event.Event) {
			e.ReceivedAt = baseTime().Add(time.Duration(i) * time.Second)
		}))
	}
	b.ingest(t, events...)
	before := events[4].ReceivedAt // events 0..3 are older

	n, err := b.store.EventDeleteBefore(b.ctx, before, 3)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	n, err = b.store.EventDeleteBefore(b.ctx, before, 3)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = b.store.EventDeleteBefore(b.ctx, before, 3)
	require.NoError(t, err)
	require.Zero(t, n)

	page, err := b.store.EventList(b.ctx, &event.ListParams{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, reversed(eventIDs(events[4:])), eventIDs(page.Events))
}

// testEventConcurrentIngests checks that concurrent calls each write all
// of their own (adapters may share commands between them): every event,
// job and status event is stored and every event marked fanned out, and of
// two concurrent calls with the same dedup key exactly one wins.
func testEventConcurrentIngests(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	b := setup(t, newStore)
	const calls = 24
	items := make([]dispatch.EventIngestItem, calls)
	for i := range items {
		ev := b.newEvent(nil)
		j1 := b.newJob(func(j *dispatch.Job) { j.EventID = ev.ID; j.SubscriptionID = "sub-1" })
		j2 := b.newJob(func(j *dispatch.Job) { j.EventID = ev.ID; j.SubscriptionID = "sub-2" })
		items[i] = dispatch.EventIngestItem{Event: ev, Jobs: []*dispatch.Job{j1, j2}, StatusEvents: []stream.Event{
			b.statusEvent(stream.TypeEventAccepted, ev.ID, baseTime()),
			b.statusEvent(stream.TypeDispatchCreated, j1.ID, baseTime()),
			b.statusEvent(stream.TypeDispatchCreated, j2.ID, baseTime()),
		}}
	}
	twinA := b.newEvent(nil)
	twinB := b.newEvent(func(e *event.Event) { e.DedupKey = twinA.DedupKey })

	var wg sync.WaitGroup
	errs := make([]error, calls+2)
	twins := make([][]dispatch.EventIngestResult, 2)
	for i := range items {
		wg.Go(func() {
			_, errs[i] = b.store.EventIngest(b.ctx, &dispatch.EventIngestParams{Items: items[i : i+1]})
		})
	}
	for k, ev := range []*event.Event{twinA, twinB} {
		wg.Go(func() {
			twins[k], errs[calls+k] = b.store.EventIngest(b.ctx, &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{{Event: ev}}})
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "call %d", i)
	}

	for _, it := range items {
		got, err := b.store.EventGetByID(b.ctx, it.Event.ID)
		require.NoError(t, err)
		requireEventEqual(t, it.Event, got)
		require.NotNil(t, got.FannedOutAt, "event %s is marked fanned out", it.Event.ID)
		for _, j := range it.Jobs {
			stored, err := b.store.JobGetByID(b.ctx, j.ID)
			require.NoError(t, err)
			require.Equal(t, j, stored)
		}
		for _, e := range it.StatusEvents {
			got, err := b.store.StatusEventListBySubject(b.ctx, e.Subject)
			require.NoError(t, err)
			require.Equal(t, []stream.Event{e}, got)
		}
	}
	due, err := b.store.EventListNotFannedOut(b.ctx, &event.ListNotFannedOutParams{ReceivedBefore: baseTime().Add(time.Hour), Limit: 100})
	require.NoError(t, err)
	require.Empty(t, eventIDs(due), "every ingested event is marked fanned out")

	require.Len(t, twins[0], 1)
	require.Len(t, twins[1], 1)
	require.NotEqual(t, twins[0][0].Duplicate, twins[1][0].Duplicate, "exactly one of two events with the same dedup key is stored")
	winner, loser := twinA, twins[1][0]
	if twins[0][0].Duplicate {
		winner, loser = twinB, twins[0][0]
	}
	require.Equal(t, winner.ID, loser.ExistingID, "the duplicate names the stored event")
}
