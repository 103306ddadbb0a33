package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/stream"
)

// FanOutClearer is implemented, in test builds only (an export_test.go), by
// adapters that can put an event back in the not-fanned-out state a crash
// between the event write and the fan-out leaves. The EventListNotFannedOut
// subtests use it and are skipped for a store without it.
type FanOutClearer interface {
	// EventClearFannedOut unsets the fanned-out marker of the given events.
	EventClearFannedOut(ctx context.Context, ids []string) error
}

// baseTime is the fixtures' reference time: millisecond precise, UTC.
func baseTime() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 123_000_000, time.UTC) }

// testBundle is what a subtest works with.
type testBundle struct {
	store Store
	ctx   context.Context
	ids   *idgen.Generator
}

func setup(t *testing.T, newStore NewStoreFunc) *testBundle {
	t.Helper()
	return &testBundle{
		store: newStore(t),
		ctx:   t.Context(),
		ids:   idgen.New(baseTime),
	}
}

// newJob returns a QUEUED push job with every field set; mod adjusts it.
func (b *testBundle) newJob(mod func(j *dispatch.Job)) *dispatch.Job {
	now := baseTime()
	j := &dispatch.Job{
		ID:             b.ids.New(),
		Kind:           dispatch.KindEvent,
		Code:           "order.created",
		Subject:        "order/1",
		EventID:        "",
		SubscriptionID: "sub-1",
		Subscription:   "orders",
		CorrelationID:  "corr-1",
		TargetURL:      "http://127.0.0.1:9/hook",
		Mode:           dispatch.ModeNextOnError,
		Delivery:       dispatch.DeliveryPush,
		MessageGroup:   "group-a",
		DispatchPoolID: "pool-1",
		Headers:        map[string]string{"X-Tenant": "acme"},
		TimeoutSeconds: 30,
		MaxAgeSeconds:  86400,
		DataOnly:       true,
		Retry:          dispatch.Retry{MaxAttempts: 5, InitialBackoffSeconds: 2, MaxBackoffSeconds: 60},
		Payload:        []byte(`{"hello":"world"}`),
		Secret:         "whsec_c2VjcmV0",
		Status:         dispatch.StatusQueued,
		MaxAttempts:    5,
		Attempts:       []dispatch.Attempt{},
		CreatedAt:      now,
		UpdatedAt:      now,
	}
	if mod != nil {
		mod(j)
	}
	return j
}

// newEvent returns a stored event with every attribute set; mod adjusts it.
func (b *testBundle) newEvent(mod func(e *event.Event)) *event.Event {
	id := b.ids.New()
	e := &event.Event{
		ID:         id,
		ReceivedAt: baseTime(),
		DedupKey:   "/orders\x00" + id,
		Event: cloudevent.Event{
			SpecVersion:     cloudevent.SpecVersion,
			ID:              "ce-" + id,
			Source:          "/orders",
			Type:            "order.created",
			Subject:         "order/1",
			Time:            baseTime().Add(-time.Second),
			DataContentType: "application/json",
			DataSchema:      "https://example.com/schema.json",
			Data:            json.RawMessage(`{"amount":12.5,"items":[1,2]}`),
			Extensions: map[string]any{
				"messagegroup": "group-a",
				"tenant":       "acme",
				"priority":     json.Number("3"),
				"urgent":       true,
			},
		},
		SchemaVersion: "1.0",
	}
	if mod != nil {
		mod(e)
	}
	return e
}

// statusEvent returns a status event about subject at t.
func (b *testBundle) statusEvent(typ, subject string, t time.Time) stream.Event {
	return stream.Event{
		ID:      b.ids.New(),
		Type:    typ,
		Time:    t,
		Subject: subject,
		Data: stream.Data{
			JobID:         subject,
			EventID:       "ev-1",
			EventType:     "order.created",
			Subscription:  "orders",
			Status:        "QUEUED",
			Attempt:       2,
			StatusCode:    503,
			DurationMs:    42,
			Error:         "boom",
			MessageGroup:  "group-a",
			NextAttemptAt: new(t.Add(time.Minute)),
			BlockedBy:     "job-0",
			Worker:        "w-1",
		},
	}
}

// insertJobs stores jobs with JobInsertMany and fails the test on error.
func (b *testBundle) insertJobs(t *testing.T, jobs ...*dispatch.Job) {
	t.Helper()
	require.NoError(t, b.store.JobInsertMany(b.ctx, &dispatch.JobInsertManyParams{Jobs: jobs}))
}

// ingest stores events (each without jobs) and fails the test on error.
func (b *testBundle) ingest(t *testing.T, events ...*event.Event) {
	t.Helper()
	items := make([]dispatch.EventIngestItem, len(events))
	for i, e := range events {
		items[i] = dispatch.EventIngestItem{Event: e}
	}
	res, err := b.store.EventIngest(b.ctx, &dispatch.EventIngestParams{Items: items})
	require.NoError(t, err)
	for i, r := range res {
		require.False(t, r.Duplicate, "item %d", i)
	}
}

// ids returns the ids of the jobs.
func jobIDs(jobs []*dispatch.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func eventIDs(events []*event.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.ID
	}
	return out
}

func statusEventIDs(events []stream.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.ID
	}
	return out
}

// reversed returns a reversed copy of s.
func reversed[T any](s []T) []T {
	out := make([]T, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// name formats a subtest or fixture name.
func name(format string, args ...any) string { return fmt.Sprintf(format, args...) }
