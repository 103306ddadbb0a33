package replay_test

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/clocktest"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/queue/memqueue"
	"github.com/hooklane/hooklane/storage/mongostore"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/storage/storetest"
	"github.com/hooklane/hooklane/subscription"
	"github.com/hooklane/hooklane/subscription/replay"
)

// storeKind opens a fresh, empty store of one adapter, removed when t ends.
type storeKind struct {
	name string
	open func(t *testing.T) storetest.Store
}

// storeKinds are the two real stores every replay test runs on.
func storeKinds() []storeKind {
	return []storeKind{{"sqlite", openSQLiteStore}, {"mongo", openMongoStore}}
}

func openSQLiteStore(t *testing.T) storetest.Store { //nolint:ireturn // both stores behind one test interface
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Config{Path: filepath.Join(t.TempDir(), "replay.db")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	return st
}

// openMongoStore opens a store on a database of its own on the server at
// HOOKLANE_TEST_MONGO_URI (FerretDB in the local stack by default).
func openMongoStore(t *testing.T) storetest.Store { //nolint:ireturn // both stores behind one test interface
	t.Helper()
	uri := cmp.Or(os.Getenv("HOOKLANE_TEST_MONGO_URI"), "mongodb://127.0.0.1:27017/")
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	db := fmt.Sprintf("hltest_replay_%d_%s", os.Getpid(), hex.EncodeToString(suffix))
	st, err := mongostore.Open(context.Background(), mongostore.Config{URI: uri, Database: db})
	require.NoError(t, err, "open mongo store at %s", uri)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, st.Drop(ctx))
		require.NoError(t, st.Close())
	})
	return st
}

// subGetter reads subscriptions straight from the store.
type subGetter struct{ st storetest.Store }

func (g subGetter) Get(ctx context.Context, id string) (*subscription.Subscription, error) {
	return g.st.SubscriptionGetByID(ctx, id)
}

// baseTime is when the fixtures' events were received.
func baseTime() time.Time { return time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC) }

// testBundle is one replay setup on one store.
type testBundle struct {
	st    storetest.Store
	q     *memqueue.Queue
	clock *clocktest.Clock
	ids   *idgen.Generator
	jobs  *dispatch.Lifecycle
	svc   *replay.Service
	ctx   context.Context
}

func setup(t *testing.T, kind storeKind) *testBundle {
	t.Helper()
	st := kind.open(t)
	q := memqueue.New(memqueue.Config{})
	t.Cleanup(func() { require.NoError(t, q.Close()) })
	clock := clocktest.New(baseTime().Add(time.Hour))
	ids := idgen.New(clock.Now)
	jobs := dispatch.NewLifecycle(dispatch.LifecycleConfig{Store: st, Queue: q, NewID: ids.New, NowFunc: clock.Now})
	svc := replay.NewService(replay.ServiceConfig{
		Store: st, Subscriptions: subGetter{st}, IDs: ids, Retention: 168 * time.Hour, NowFunc: clock.Now,
	})
	return &testBundle{st: st, q: q, clock: clock, ids: ids, jobs: jobs, svc: svc, ctx: t.Context()}
}

// worker returns a Worker named owner with a small page, unbounded rate and
// no backlog bound unless cfg says otherwise.
func (b *testBundle) worker(owner string, mod func(c *replay.WorkerConfig)) *replay.Worker {
	cfg := replay.WorkerConfig{
		Store: b.st, Subscriptions: subGetter{b.st}, Jobs: b.jobs, IDs: b.ids, Owner: owner,
		Rate: math.Inf(1), BacklogMax: -1, PageSize: 3, NowFunc: b.clock.Now,
	}
	if mod != nil {
		mod(&cfg)
	}
	return replay.NewWorker(cfg)
}

// eventSpec is one stored event of a fixture.
type eventSpec struct {
	typ, region, group string
	// at is the receive time's offset from baseTime.
	at time.Duration
}

// storeEvents stores events as ingest does, with no jobs (no subscription
// matched them when they arrived).
func (b *testBundle) storeEvents(t *testing.T, specs ...eventSpec) []*event.Event {
	t.Helper()
	items := make([]dispatch.EventIngestItem, len(specs))
	events := make([]*event.Event, len(specs))
	for i, s := range specs {
		received := baseTime().Add(s.at)
		id := idgen.WithTime(b.ids.New(), received)
		ext := map[string]any{}
		if s.region != "" {
			ext["region"] = s.region
		}
		if s.group != "" {
			ext["messagegroup"] = s.group
		}
		events[i] = &event.Event{
			ID: id, ReceivedAt: received, DedupKey: "/shop\x00" + id,
			Event: cloudevent.Event{
				SpecVersion: cloudevent.SpecVersion, ID: id, Source: "/shop", Type: s.typ, Time: received,
				DataContentType: "application/json", Data: json.RawMessage(`{"n":` + strconv.Itoa(i) + `}`), Extensions: ext,
			},
		}
		items[i] = dispatch.EventIngestItem{Event: events[i]}
	}
	_, err := b.st.EventIngest(b.ctx, &dispatch.EventIngestParams{Items: items})
	require.NoError(t, err)
	return events
}

// newSub stores a subscription bound to order.* with mod applied.
func (b *testBundle) newSub(t *testing.T, mod func(s *subscription.Subscription)) *subscription.Subscription {
	t.Helper()
	now := b.clock.Now().UTC().Truncate(time.Millisecond)
	sub := &subscription.Subscription{
		ID: b.ids.New(), Code: "orders-" + b.ids.New()[20:], Name: "orders",
		EventTypes: []subscription.Binding{{EventTypeCode: "order.*"}},
		Target:     "http://127.0.0.1:9/hook", Mode: dispatch.ModeNextOnError, Delivery: dispatch.DeliveryPush,
		TimeoutSeconds: 30, MaxAgeSeconds: 86400, Sequence: 99,
		Retry:  dispatch.Retry{MaxAttempts: 3, InitialBackoffSeconds: 1, MaxBackoffSeconds: 10},
		Status: subscription.StatusActive, CreatedAt: now, UpdatedAt: now,
		Secrets: []subscription.Secret{{Value: "whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"}},
	}
	if mod != nil {
		mod(sub)
	}
	require.NoError(t, b.st.SubscriptionInsert(b.ctx, sub))
	return sub
}

// start starts a replay over the whole fixture range.
func (b *testBundle) start(t *testing.T, sub *subscription.Subscription, mod func(p *replay.StartParams)) *replay.Replay {
	t.Helper()
	p := &replay.StartParams{Since: baseTime().Add(-time.Minute)}
	if mod != nil {
		mod(p)
	}
	r, err := b.svc.Start(b.ctx, sub.ID, p)
	require.NoError(t, err)
	require.Equal(t, replay.StatusRunning, r.Status)
	return r
}

// get reads a replay back.
func (b *testBundle) get(t *testing.T, id string) *replay.Replay {
	t.Helper()
	r, err := b.svc.Get(b.ctx, id)
	require.NoError(t, err)
	return r
}

// subJobs returns every job of the subscription in event order (ties: job id).
func (b *testBundle) subJobs(t *testing.T, subID string) []*dispatch.Job {
	t.Helper()
	var out []*dispatch.Job
	p := &dispatch.JobListParams{SubscriptionID: subID, Limit: 500}
	for {
		page, err := b.st.JobList(b.ctx, p)
		require.NoError(t, err)
		out = append(out, page.Jobs...)
		if page.NextCursor == "" {
			break
		}
		p.Cursor = page.NextCursor
	}
	slices.SortFunc(out, func(a, b *dispatch.Job) int {
		return cmp.Or(cmp.Compare(a.EventID, b.EventID), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// eventIDsOf returns the event ids of jobs.
func eventIDsOf(jobs []*dispatch.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.EventID
	}
	return out
}
