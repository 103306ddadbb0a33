package operational_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/ingest/operational"
	"github.com/hooklane/hooklane/storage/pipelinetest"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBuiltInTypesAreValid(t *testing.T) {
	t.Parallel()
	for _, et := range operational.EventTypes(time.Now()) {
		require.NoError(t, event.ValidateTypeCode(et.Code), "code %s keeps API.md §2's rule", et.Code)
		require.Len(t, et.Versions, 1)
		_, err := schema.Compile(et.Code, et.Versions[0].Version, et.Versions[0].Schema)
		require.NoError(t, err, "schema of %s compiles", et.Code)
		require.True(t, operational.IsOperational(et.Code))
	}
}

func TestRegisterIsIdempotent(t *testing.T) {
	t.Parallel()
	p := pipelinetest.New(t, pipelinetest.Config{})
	ctx := context.Background()
	added, err := operational.Register(ctx, p.Store, time.Now())
	require.NoError(t, err)
	require.True(t, added)
	// An operator archives one; a second start leaves it archived.
	et, err := p.Store.EventTypeGet(ctx, operational.TypeDispatchDiscarded)
	require.NoError(t, err)
	et.Status = schema.TypeArchive
	require.NoError(t, p.Store.EventTypeUpdate(ctx, et))
	added, err = operational.Register(ctx, p.Store, time.Now())
	require.NoError(t, err)
	require.False(t, added)
	et, err = p.Store.EventTypeGet(ctx, operational.TypeDispatchDiscarded)
	require.NoError(t, err)
	require.Equal(t, schema.TypeArchive, et.Status)
}

// fixture is a pipeline with the built-in types registered, two operator
// subscriptions to hooklane.*, and a running Forwarder.
type fixture struct {
	p          *pipelinetest.Pipeline
	fwd        *operational.Forwarder
	ops, pager *subscription.Subscription
}

func setup(t *testing.T) *fixture {
	t.Helper()
	p := pipelinetest.New(t, pipelinetest.Config{DefaultPool: true})
	ctx := context.Background()
	_, err := operational.Register(ctx, p.Store, time.Now())
	require.NoError(t, err)
	p.Registry.Invalidate()
	f := &fixture{p: p}
	now := time.Now().UTC().Truncate(time.Millisecond)
	mk := func(code, binding string) *subscription.Subscription {
		s := &subscription.Subscription{
			ID: p.IDs.New(), Code: code, Target: "http://127.0.0.1:9/" + code,
			EventTypes: []subscription.Binding{{EventTypeCode: binding}}, CreatedAt: now, UpdatedAt: now,
		}
		s.ApplyDefaults()
		require.NoError(t, p.Store.SubscriptionInsert(ctx, s))
		return s
	}
	f.ops = mk("ops", "hooklane.*")
	f.pager = mk("pager", "hooklane.subscription.circuit.opened")
	p.Subs.Invalidate()
	f.fwd = operational.NewForwarder(operational.ForwarderConfig{Ingest: p.Ingest.Gateway(), Subscriptions: p.Store})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = f.fwd.Run(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	return f
}

// event waits for the one stored event of type typ and returns it.
func (f *fixture) event(t *testing.T, typ string) *event.Event {
	t.Helper()
	var got []*event.Event
	require.Eventually(t, func() bool {
		pg, err := f.p.Store.EventList(context.Background(), &event.ListParams{Type: typ, Limit: 100})
		require.NoError(t, err)
		got = pg.Events
		return len(got) >= 1
	}, 60*time.Second, 10*time.Millisecond, "no event of %s", typ)
	require.Len(t, got, 1)
	return got[0]
}

// subscriptionsOf returns the codes of the subscriptions an event's jobs
// belong to.
func (f *fixture) subscriptionsOf(t *testing.T, ev *event.Event) []string {
	t.Helper()
	jobs, err := f.p.Store.JobListByEvent(context.Background(), ev.ID)
	require.NoError(t, err)
	var out []string
	for _, j := range jobs {
		out = append(out, j.Subscription)
	}
	return out
}

func TestCircuitEventReachesEveryoneButItsSubject(t *testing.T) {
	t.Parallel()
	f := setup(t)
	next := time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)
	opened := stream.Event{
		ID: f.p.IDs.New(), Type: stream.TypeSubscriptionCircuitOpened, Time: next.Add(-30 * time.Second),
		Subject: f.ops.ID, Data: stream.Data{
			Subscription: "ops", Reason: "10 consecutive failed attempts, the last: HTTP 503",
			ConsecutiveFailures: 10, NextProbeAt: &next,
		},
	}
	f.fwd.Observe(nil, []stream.Event{opened})
	f.fwd.Observe(nil, []stream.Event{opened}) // a repeat is a duplicate

	got := f.event(t, operational.TypeCircuitOpened)
	require.Equal(t, opened.ID, got.Event.ID)
	require.Equal(t, operational.Source, got.Event.Source)
	require.Equal(t, f.ops.ID, got.Event.Subject)
	require.Equal(t, f.ops.ID, got.Event.Ext(subscription.ExtSubscriptionID))
	require.Equal(t, operational.SchemaVersion, got.SchemaVersion, "validated against the built-in schema")
	var data map[string]any
	require.NoError(t, json.Unmarshal(got.Event.Data, &data))
	require.Equal(t, map[string]any{
		"subscriptionId": f.ops.ID, "subscription": "ops",
		"reason": "10 consecutive failed attempts, the last: HTTP 503", "consecutiveFailures": float64(10),
		"nextProbeAt": "2026-03-01T12:00:30.000Z",
	}, data)
	require.Equal(t, []string{"pager"}, f.subscriptionsOf(t, got), "ops subscribes to hooklane.* but hears nothing about itself")
}

func TestDiscardedJobEvents(t *testing.T) {
	t.Parallel()
	f := setup(t)
	now := time.Now().UTC()
	j := &dispatch.Job{
		ID: f.p.IDs.New(), Kind: dispatch.KindEvent, Code: "shop.order.created", EventID: "ev-1",
		SubscriptionID: "sub-shop", Subscription: "shop", MessageGroup: "shop:o-1", Status: dispatch.StatusError,
	}
	discarded := j.StatusEvent(f.p.IDs.New(), stream.TypeDispatchDiscarded, now)
	discarded.Data.StatusCode, discarded.Data.Error, discarded.Data.Attempt = 404, "HTTP 404", 1
	// A discarded job of an operational event makes no news.
	opsJob := *j
	opsJob.ID, opsJob.Code, opsJob.SubscriptionID = f.p.IDs.New(), operational.TypeDispatchDiscarded, f.pager.ID
	f.fwd.Observe(&opsJob, []stream.Event{opsJob.StatusEvent(f.p.IDs.New(), stream.TypeDispatchDiscarded, now)})
	// Other status events are not operational events.
	f.fwd.Observe(j, []stream.Event{j.StatusEvent(f.p.IDs.New(), stream.TypeDispatchFailed, now)})
	f.fwd.Observe(j, []stream.Event{discarded})

	got := f.event(t, operational.TypeDispatchDiscarded)
	require.Equal(t, discarded.ID, got.Event.ID)
	var data map[string]any
	require.NoError(t, json.Unmarshal(got.Event.Data, &data))
	require.Equal(t, map[string]any{
		"jobId": j.ID, "eventId": "ev-1", "eventType": "shop.order.created",
		"subscriptionId": "sub-shop", "subscription": "shop", "messageGroup": "shop:o-1", "attempt": float64(1),
		"statusCode": float64(404), "error": "HTTP 404",
	}, data)
	require.Equal(t, []string{"ops"}, f.subscriptionsOf(t, got))
}
