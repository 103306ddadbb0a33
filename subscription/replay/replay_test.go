package replay_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/queue"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
	"github.com/hooklane/hooklane/subscription/replay"
)

// fixture is a week of mixed events: order.* in two regions and other types.
func fixture() []eventSpec {
	return []eventSpec{
		{typ: "order.created", region: "eu", at: 0},
		{typ: "order.created", region: "us", at: time.Second},
		{typ: "invoice.created", region: "eu", at: 2 * time.Second},
		{typ: "order.cancelled", region: "eu", at: 3 * time.Second},
		{typ: "order.created", region: "eu", at: 3 * time.Second},
		{typ: "order.shipped", at: 4 * time.Second},
		{typ: "order.created", region: "eu", at: 5 * time.Second},
	}
}

// euOrders keeps the events a subscription to order.* with region = eu
// matches.
func euOrders(events []*event.Event) []*event.Event {
	var out []*event.Event
	for _, e := range events {
		if event.MatchTypePattern("order.*", e.Event.Type) && e.Event.Ext("region") == "eu" {
			out = append(out, e)
		}
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

func euFilter(s *subscription.Subscription) {
	s.Filters = []subscription.Filter{{Field: "region", Op: "eq", Value: json.RawMessage(`"eu"`)}}
}

func TestReplay(t *testing.T) {
	t.Parallel()
	for _, kind := range storeKinds() {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			testReplay(t, kind)
		})
	}
}

func testReplay(t *testing.T, kind storeKind) {
	t.Helper()

	t.Run("BackfillsANewSubscriptionWithFilters", func(t *testing.T) {
		t.Parallel()
		b := setup(t, kind)
		events := b.storeEvents(t, fixture()...)
		sub := b.newSub(t, euFilter) // created after the events
		r := b.start(t, sub, nil)
		require.NoError(t, b.worker("a:1", nil).RunOnce(b.ctx))

		got := b.get(t, r.ID)
		want := euOrders(events)
		require.Equal(t, replay.StatusCompleted, got.Status)
		require.Equal(t, int64(len(events)), got.Scanned)
		require.Equal(t, int64(len(want)), got.Matched)
		require.Equal(t, int64(len(want)), got.Created)
		require.NotNil(t, got.CompletedAt)
		jobs := b.subJobs(t, sub.ID)
		require.Equal(t, eventIDs(want), eventIDsOf(jobs), "one job per matching event, in event order")
		for i, j := range jobs {
			// The id the live job would have had: a later ingest-side
			// fan-out or a repeat cannot add a second one.
			require.Equal(t, idgen.Derived(want[i].ReceivedAt, want[i].ID, sub.ID), j.ID)
			require.Equal(t, dispatch.StatusQueued, j.Status)
			require.Equal(t, sub.Code, j.Subscription)
		}
		started, err := b.st.StatusEventListBySubject(b.ctx, r.ID)
		require.NoError(t, err)
		require.Len(t, started, 2)
		require.Equal(t, stream.TypeReplayStarted, started[0].Type)
		require.Equal(t, stream.TypeReplayCompleted, started[1].Type)
		require.Equal(t, sub.Code, started[1].Data.Subscription)
		require.Equal(t, int64(len(want)), *started[1].Data.Created)
		require.Equal(t, int64(len(events)), *started[1].Data.Scanned)
	})

	t.Run("SameRangeTwiceCreatesNothingTheSecondTime", func(t *testing.T) {
		t.Parallel()
		b := setup(t, kind)
		events := b.storeEvents(t, fixture()...)
		sub := b.newSub(t, euFilter)
		w := b.worker("a:1", nil)
		first := b.start(t, sub, nil)
		require.NoError(t, w.RunOnce(b.ctx))
		second := b.start(t, sub, nil)
		require.NoError(t, w.RunOnce(b.ctx))

		want := len(euOrders(events))
		require.Equal(t, int64(want), b.get(t, first.ID).Created)
		got := b.get(t, second.ID)
		require.Equal(t, replay.StatusCompleted, got.Status)
		require.Equal(t, int64(want), got.Matched)
		require.Zero(t, got.Created)
		require.Len(t, b.subJobs(t, sub.ID), want)
	})

	t.Run("LiveJobsCountAsDelivered", func(t *testing.T) {
		t.Parallel()
		b := setup(t, kind)
		sub := b.newSub(t, euFilter)
		events := b.storeEvents(t, fixture()...)
		// The subscription received the first matching event live.
		live := euOrders(events)[0]
		require.NoError(t, b.jobs.Create(b.ctx, []*dispatch.Job{dispatch.NewEventJob(live, sub.JobSettings(), b.clock.Now())}))
		r := b.start(t, sub, nil)
		require.NoError(t, b.worker("a:1", nil).RunOnce(b.ctx))
		want := euOrders(events)
		require.Equal(t, int64(len(want)-1), b.get(t, r.ID).Created)
		require.Equal(t, eventIDs(want), eventIDsOf(b.subJobs(t, sub.ID)))
	})

	t.Run("RedeliverCreatesNewJobsOncePerReplay", func(t *testing.T) {
		t.Parallel()
		b := setup(t, kind)
		events := b.storeEvents(t, fixture()...)
		sub := b.newSub(t, euFilter)
		w := b.worker("a:1", nil)
		b.start(t, sub, nil)
		require.NoError(t, w.RunOnce(b.ctx))
		before := b.subJobs(t, sub.ID)

		r := b.start(t, sub, func(p *replay.StartParams) { p.Redeliver = true })
		require.NoError(t, w.RunOnce(b.ctx))
		want := euOrders(events)
		got := b.get(t, r.ID)
		require.Equal(t, int64(len(want)), got.Created)
		after := b.subJobs(t, sub.ID)
		require.Len(t, after, 2*len(want))
		seen := map[string]bool{}
		for _, j := range after {
			require.False(t, seen[j.ID], "job ids are unique")
			seen[j.ID] = true
		}
		for i, e := range want {
			require.True(t, seen[idgen.Derived(e.ReceivedAt, e.ID, sub.ID, r.ID)], "event %d: the redelivery's id derives from the replay", i)
			require.True(t, seen[before[i].ID])
		}
	})

	t.Run("EventTypesNarrow", func(t *testing.T) {
		t.Parallel()
		b := setup(t, kind)
		events := b.storeEvents(t, fixture()...)
		sub := b.newSub(t, euFilter)
		r := b.start(t, sub, func(p *replay.StartParams) { p.EventTypes = []string{"order.cancelled", "invoice.*"} })
		require.NoError(t, b.worker("a:1", nil).RunOnce(b.ctx))
		require.Equal(t, int64(1), b.get(t, r.ID).Created, "invoice.* is narrowed to, but the subscription does not bind it")
		require.Equal(t, []string{events[3].ID}, eventIDsOf(b.subJobs(t, sub.ID)))
	})

	t.Run("RangeIsSinceInclusiveUntilExclusive", func(t *testing.T) {
		t.Parallel()
		b := setup(t, kind)
		events := b.storeEvents(t, fixture()...)
		sub := b.newSub(t, euFilter)
		r := b.start(t, sub, func(p *replay.StartParams) {
			p.Since, p.Until = baseTime().Add(3*time.Second), baseTime().Add(5*time.Second)
		})
		require.NoError(t, b.worker("a:1", nil).RunOnce(b.ctx))
		got := b.get(t, r.ID)
		require.Equal(t, int64(3), got.Scanned)
		require.Equal(t, []string{events[3].ID, events[4].ID}, eventIDsOf(b.subJobs(t, sub.ID)))
	})

	t.Run("PausedAndPullSubscriptionsAreReplayed", func(t *testing.T) {
		t.Parallel()
		b := setup(t, kind)
		events := b.storeEvents(t, fixture()...)
		paused := b.newSub(t, func(s *subscription.Subscription) { euFilter(s); s.Status = subscription.StatusPaused })
		pull := b.newSub(t, func(s *subscription.Subscription) { euFilter(s); s.Delivery = dispatch.DeliveryPull; s.Target = "" })
		b.start(t, paused, nil)
		b.start(t, pull, nil)
		require.NoError(t, b.worker("a:1", nil).RunOnce(b.ctx))
		want := eventIDs(euOrders(events))
		require.Equal(t, want, eventIDsOf(b.subJobs(t, paused.ID)))
		pulled := b.subJobs(t, pull.ID)
		require.Equal(t, want, eventIDsOf(pulled))
		require.Equal(t, len(want), b.q.Stats().Messages, "only the push jobs went to the queue")
	})

	t.Run("ResumesAfterACrashWithNoJobTwice", func(t *testing.T) {
		t.Parallel()
		b := setup(t, kind)
		var specs []eventSpec
		for i := range 20 {
			specs = append(specs, eventSpec{typ: "order.created", region: "eu", at: time.Duration(i) * time.Second})
		}
		events := b.storeEvents(t, specs...)
		sub := b.newSub(t, nil)
		r := b.start(t, sub, func(p *replay.StartParams) { p.Redeliver = true })

		// The first worker dies after its second checkpoint: its context
		// ends mid-replay, the lease stays with it.
		ctx, kill := context.WithCancel(b.ctx)
		pages := 0
		first := b.worker("a:1", func(c *replay.WorkerConfig) {
			c.AfterPageFunc = func(*replay.Replay) {
				if pages++; pages == 2 {
					kill()
				}
			}
		})
		require.NoError(t, first.RunOnce(ctx))
		mid := b.get(t, r.ID)
		require.Equal(t, replay.StatusRunning, mid.Status)
		require.Equal(t, "a:1", mid.Owner)
		require.Equal(t, int64(6), mid.Scanned)

		second := b.worker("b:2", nil)
		require.NoError(t, second.RunOnce(b.ctx))
		require.Equal(t, replay.StatusRunning, b.get(t, r.ID).Status, "the lease of the first worker holds")

		b.clock.Advance(replay.LeaseDefault)
		require.NoError(t, second.RunOnce(b.ctx))
		done := b.get(t, r.ID)
		require.Equal(t, replay.StatusCompleted, done.Status)
		require.Equal(t, int64(len(events)), done.Scanned)
		jobs := b.subJobs(t, sub.ID)
		require.Equal(t, eventIDs(events), eventIDsOf(jobs), "every event once")
	})

	t.Run("DeletedSubscriptionFails", func(t *testing.T) {
		t.Parallel()
		b := setup(t, kind)
		b.storeEvents(t, fixture()...)
		sub := b.newSub(t, nil)
		r := b.start(t, sub, nil)
		require.NoError(t, b.st.SubscriptionDelete(b.ctx, sub.ID))
		require.NoError(t, b.worker("a:1", nil).RunOnce(b.ctx))
		got := b.get(t, r.ID)
		require.Equal(t, replay.StatusFailed, got.Status)
		require.Contains(t, got.Error, "deleted")
	})

	t.Run("WaitsWhileTheBacklogIsAboveItsBound", func(t *testing.T) {
		t.Parallel()
		b := setup(t, kind)
		events := b.storeEvents(t, fixture()...)
		sub := b.newSub(t, euFilter)
		// Three undelivered jobs of the subscription already: above a bound
		// of 2. (The replay's own jobs count too once created.)
		first := euOrders(events)[:3]
		var backlog []*dispatch.Job
		for _, e := range first {
			backlog = append(backlog, dispatch.NewEventJob(e, sub.JobSettings(), b.clock.Now()))
		}
		require.NoError(t, b.jobs.Create(b.ctx, backlog))
		r := b.start(t, sub, nil)
		var (
			mu    sync.Mutex
			seen  []int
			drain = func() {
				for _, j := range backlog {
					_, err := b.jobs.Cancel(b.ctx, j.ID, "drained by the test")
					require.NoError(t, err)
				}
			}
		)
		w := b.worker("a:1", func(c *replay.WorkerConfig) {
			c.BacklogMax = 2
			c.BacklogWait = time.Millisecond
			c.OnBacklogFunc = func(got *replay.Replay, n int) {
				mu.Lock()
				defer mu.Unlock()
				seen = append(seen, n)
				require.Zero(t, got.Scanned, "nothing is read while waiting")
				if len(seen) == 2 {
					drain()
				}
			}
		})
		require.NoError(t, w.RunOnce(b.ctx))
		require.Equal(t, []int{3, 3}, seen)
		got := b.get(t, r.ID)
		require.Equal(t, replay.StatusCompleted, got.Status)
		require.Equal(t, int64(len(euOrders(events))-3), got.Created)
	})

	t.Run("OrderedGroupsKeepEventOrderAlsoBeforeLiveJobs", func(t *testing.T) {
		t.Parallel()
		b := setup(t, kind)
		var specs []eventSpec
		for i := range 9 {
			specs = append(specs, eventSpec{typ: "order.created", group: []string{"g1", "g2", "g3"}[i%3], at: time.Duration(i) * time.Second})
		}
		events := b.storeEvents(t, specs...)
		sub := b.newSub(t, func(s *subscription.Subscription) { s.Mode = dispatch.ModeBlockOnError })
		b.start(t, sub, nil)
		require.NoError(t, b.worker("a:1", nil).RunOnce(b.ctx))

		// The queue got each group's jobs in event order.
		// FIFO groups: one message of a group in flight at a time, so
		// receive and delete until the queue is empty.
		byGroup := map[string][]string{}
		for range 20 {
			msgs, err := b.q.Receive(b.ctx, queue.ReceiveParams{Max: 10})
			require.NoError(t, err)
			if len(msgs) == 0 {
				break
			}
			for _, m := range msgs {
				c, err := dispatch.ReadMessage(m.Body)
				require.NoError(t, err)
				j, err := b.jobs.Get(b.ctx, c.JobID)
				require.NoError(t, err)
				byGroup[j.MessageGroup] = append(byGroup[j.MessageGroup], j.EventID)
				require.NoError(t, b.q.Delete(b.ctx, m.ReceiptHandle))
			}
		}
		for g := range 3 {
			var want []string
			for i := g; i < len(events); i += 3 {
				want = append(want, events[i].ID)
			}
			got := byGroup[sub.Code+":"+[]string{"g1", "g2", "g3"}[g]]
			require.Equal(t, want, got, "group g%d", g+1)
		}

		// A live event of group g1 arriving now takes its place after the
		// replayed ones: the order gate holds its job while they are
		// unfinished.
		live := b.storeEvents(t, eventSpec{typ: "order.created", group: "g1", at: time.Hour})[0]
		lj := dispatch.NewEventJob(live, sub.JobSettings(), b.clock.Now())
		require.NoError(t, b.jobs.Insert(b.ctx, []*dispatch.Job{lj}))
		lj, err := b.jobs.Get(b.ctx, lj.ID)
		require.NoError(t, err)
		held, err := b.jobs.HoldForOrder(b.ctx, lj)
		require.NoError(t, err)
		require.True(t, held, "a live job waits behind the replayed jobs of its group")
		lj, err = b.jobs.Get(b.ctx, lj.ID)
		require.NoError(t, err)
		require.Equal(t, idgen.Derived(events[0].ReceivedAt, events[0].ID, sub.ID), lj.BlockedBy)
	})

	t.Run("RateBoundsCreation", func(t *testing.T) {
		t.Parallel()
		b := setup(t, kind)
		var specs []eventSpec
		for i := range 12 {
			specs = append(specs, eventSpec{typ: "order.created", at: time.Duration(i) * time.Millisecond})
		}
		b.storeEvents(t, specs...)
		sub := b.newSub(t, nil)
		r := b.start(t, sub, nil)
		w := b.worker("a:1", func(c *replay.WorkerConfig) { c.Rate = 20 })
		began := time.Now()
		require.NoError(t, w.RunOnce(b.ctx))
		// A burst of 3 (a page), then 9 more at 20/s: at least 0.45 s.
		require.GreaterOrEqual(t, time.Since(began), 400*time.Millisecond)
		require.Equal(t, int64(12), b.get(t, r.ID).Created)
	})

	t.Run("ClientScopeIsRespected", func(t *testing.T) {
		t.Parallel()
		sub := &subscription.Subscription{
			ID: "s", Code: "c", ClientID: new("acme"), Status: subscription.StatusActive,
			EventTypes: []subscription.Binding{{EventTypeCode: "order.created"}},
		}
		other := &cloudevent.Event{
			SpecVersion: "1.0", ID: "1", Source: "/s", Type: "order.created",
			Extensions: map[string]any{"clientid": "globex"},
		}
		require.False(t, subscription.Accepts(sub, other, ""), "another client's event never matches a client's subscription")
		other.Extensions["clientid"] = "acme"
		require.True(t, subscription.Accepts(sub, other, ""), "the client's own event matches")
		b := setup(t, kind)
		mine := b.storeEvents(t, eventSpec{typ: "order.created", at: 0}, eventSpec{typ: "order.created", at: time.Second})
		scoped := b.newSub(t, func(s *subscription.Subscription) { s.ClientID = new("acme") })
		r := b.start(t, scoped, nil)
		require.NoError(t, b.worker("a:1", nil).RunOnce(b.ctx))
		require.Zero(t, b.get(t, r.ID).Created, "events of no client do not reach a client's subscription: %v", eventIDs(mine))
	})
}

func TestStartValidates(t *testing.T) {
	t.Parallel()
	b := setup(t, storeKinds()[0])
	sub := b.newSub(t, nil)
	tests := []struct {
		name    string
		p       replay.StartParams
		pointer string
	}{
		{"since missing", replay.StartParams{}, "/since"},
		{"since beyond retention", replay.StartParams{Since: b.clock.Now().Add(-169 * time.Hour)}, "/since"},
		{"until before since", replay.StartParams{Since: baseTime(), Until: baseTime().Add(-time.Second)}, "/until"},
		{"bad pattern", replay.StartParams{Since: baseTime(), EventTypes: []string{"order.created", "Order*"}}, "/eventTypes/1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := b.svc.Start(t.Context(), sub.ID, &tt.p)
			var rej *replay.Rejection
			require.ErrorAs(t, err, &rej)
			require.Equal(t, tt.pointer, rej.Errors[0].Pointer)
		})
	}
	_, err := b.svc.Start(t.Context(), "missing", &replay.StartParams{Since: baseTime()})
	require.ErrorIs(t, err, store.ErrNotFound)
	r, err := b.svc.Start(t.Context(), sub.ID, &replay.StartParams{Since: baseTime()})
	require.NoError(t, err)
	require.Equal(t, b.clock.Now().UTC().Truncate(time.Millisecond), r.Until, "until defaults to now")
	body, err := json.Marshal(r)
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"`+r.ID+`","subscription":"`+sub.Code+`","subscriptionId":"`+sub.ID+`","clientId":null,
		"status":"RUNNING","since":"2026-11-20T09:00:00.000Z","until":"2026-11-20T10:00:00.000Z","eventTypes":[],
		"redeliver":false,"scanned":0,"matched":0,"created":0,"error":null,
		"createdAt":"2026-11-20T10:00:00.000Z","updatedAt":"2026-11-20T10:00:00.000Z","completedAt":null,"position":null}`, string(body))
}
