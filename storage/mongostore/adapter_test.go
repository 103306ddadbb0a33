package mongostore_test

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/storage/mongostore"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
)

// Tests of what is particular to this adapter; the port contracts are
// covered by storetest in TestStore.

func baseTime() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }

type testBundle struct {
	env *testEnv
	ctx context.Context
	ids *idgen.Generator
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	return &testBundle{env: newTestEnv(t), ctx: t.Context(), ids: idgen.New(baseTime)}
}

func (b *testBundle) newEvent() *event.Event {
	id := b.ids.New()
	return &event.Event{
		ID:         id,
		ReceivedAt: baseTime(),
		DedupKey:   "/src\x00" + id,
		Event: cloudevent.Event{
			SpecVersion: cloudevent.SpecVersion, ID: id, Source: "/src", Type: "order.created",
			Time: baseTime(), Extensions: map[string]any{"tenant": "acme"},
		},
	}
}

func (b *testBundle) newJob(eventID string) *dispatch.Job {
	return &dispatch.Job{
		ID: b.ids.New(), Kind: dispatch.KindEvent, Code: "order.created", EventID: eventID,
		SubscriptionID: "sub-1", Subscription: "orders", Mode: dispatch.ModeImmediate,
		Status: dispatch.StatusQueued, CreatedAt: baseTime(), UpdatedAt: baseTime(),
	}
}

func TestOpenRequiresURI(t *testing.T) {
	t.Parallel()
	s, err := mongostore.Open(t.Context(), mongostore.Config{})
	require.Error(t, err)
	require.Nil(t, s)
}

func TestOpenUnreachableIsUnavailable(t *testing.T) {
	t.Parallel()
	// A port nothing listens on: take one, then free it.
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	s, err := mongostore.Open(t.Context(), mongostore.Config{
		URI: "mongodb://" + addr + "/?serverSelectionTimeoutMS=300&connectTimeoutMS=300",
	})
	require.ErrorIs(t, err, store.ErrUnavailable)
	require.Nil(t, s)
}

func TestServerLossIsUnavailable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	target, err := url.Parse(b.env.uri)
	require.NoError(t, err)
	proxy := startProxy(t, target.Host)

	db := b.env.newDatabase(t)
	s := b.env.open(t, db, func(cfg *mongostore.Config) {
		cfg.URI = "mongodb://" + proxy.addr() + "/?serverSelectionTimeoutMS=500&connectTimeoutMS=500"
	})
	require.NoError(t, s.Ping(b.ctx))
	job := b.newJob("")
	require.NoError(t, s.JobInsertMany(b.ctx, &dispatch.JobInsertManyParams{Jobs: []*dispatch.Job{job}}))

	proxy.stop()
	require.ErrorIs(t, s.Ping(b.ctx), store.ErrUnavailable)
	_, err = s.JobGetByID(b.ctx, job.ID)
	require.ErrorIs(t, err, store.ErrUnavailable)
	_, err = s.EventIngest(b.ctx, &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{{Event: b.newEvent()}}})
	require.ErrorIs(t, err, store.ErrUnavailable)
}

func TestOpenTwiceSharesIndexes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	db := b.env.newDatabase(t)
	first := b.env.open(t, db, nil)
	second := b.env.open(t, db, nil) // creates the same indexes again

	ev := b.newEvent()
	_, err := first.EventIngest(b.ctx, &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{{Event: ev}}})
	require.NoError(t, err)
	dup := b.newEvent()
	dup.DedupKey = ev.DedupKey
	res, err := second.EventIngest(b.ctx, &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{{Event: dup}}})
	require.NoError(t, err)
	require.Equal(t, []dispatch.EventIngestResult{{Duplicate: true, ExistingID: ev.ID}}, res)
}

func TestEventIngestRepeatedCallWritesNothingTwice(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.env.open(t, b.env.newDatabase(t), nil)

	ev := b.newEvent()
	job := b.newJob(ev.ID)
	se := job.StatusEvent(b.ids.New(), stream.TypeDispatchCreated, baseTime())
	p := &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{{Event: ev, Jobs: []*dispatch.Job{job}, StatusEvents: []stream.Event{se}}}}
	res, err := s.EventIngest(b.ctx, p)
	require.NoError(t, err)
	require.Equal(t, []dispatch.EventIngestResult{{}}, res)

	// A client retrying the same request: the event is its own duplicate.
	res, err = s.EventIngest(b.ctx, p)
	require.NoError(t, err)
	require.Equal(t, []dispatch.EventIngestResult{{Duplicate: true, ExistingID: ev.ID}}, res)
	jobs, err := s.JobListByEvent(b.ctx, ev.ID)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	events, err := s.StatusEventListBySubject(b.ctx, job.ID)
	require.NoError(t, err)
	require.Equal(t, []stream.Event{se}, events)
}

func TestEventListExtNameIsNotAFieldPath(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.env.open(t, b.env.newDatabase(t), nil)
	_, err := s.EventIngest(b.ctx, &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{{Event: b.newEvent()}}})
	require.NoError(t, err)

	for _, name := range []string{"$where", "tenant.x", ""} {
		page, err := s.EventList(b.ctx, &event.ListParams{Ext: map[string]string{name: "acme"}, Limit: 10})
		require.NoError(t, err, name)
		require.Empty(t, page.Events, name)
	}
	page, err := s.EventList(b.ctx, &event.ListParams{Ext: map[string]string{"tenant": "acme"}, Limit: 10})
	require.NoError(t, err)
	require.Len(t, page.Events, 1)
}

func TestJobUpdateWriteGuard(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := baseTime().Add(time.Hour)
	s := b.env.open(t, b.env.newDatabase(t), func(cfg *mongostore.Config) {
		cfg.NowFunc = func() time.Time { return now }
	})
	s.SetWriteGuards(true) // whatever the server: this tests the guards
	held := b.newJob("")
	crashed := b.newJob("")
	require.NoError(t, s.JobInsertMany(b.ctx, &dispatch.JobInsertManyParams{Jobs: []*dispatch.Job{held, crashed}}))

	// A live writer is moving the job from version 1 to 2.
	require.NoError(t, s.PlantGuard(b.ctx, "jobs", held.ID, 2, now))
	held.Worker = "w-1"
	require.ErrorIs(t, s.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: held}), store.ErrConflict)
	require.Equal(t, int64(1), held.Version)

	// A writer died holding the guard a minute ago: it is taken over.
	require.NoError(t, s.PlantGuard(b.ctx, "jobs", crashed.ID, 2, now.Add(-time.Minute)))
	crashed.Worker = "w-2"
	require.NoError(t, s.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: crashed}))
	require.Equal(t, int64(2), crashed.Version)
	got, err := s.JobGetByID(b.ctx, crashed.ID)
	require.NoError(t, err)
	require.Equal(t, "w-2", got.Worker)

	// A refused update releases its guard: an update claiming version 5
	// takes the guard of step 6, and the real step 6 must still pass.
	bogus := *crashed
	bogus.Version = 5
	require.ErrorIs(t, s.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: &bogus}), store.ErrConflict)
	for want := int64(3); want <= 6; want++ {
		crashed.AttemptCount++
		require.NoError(t, s.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: crashed}), "step to %d", want)
		require.Equal(t, want, crashed.Version)
	}
}

func TestWriteGuardsOnlyOnFerretDB(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.env.open(t, b.env.newDatabase(t), nil)
	var info bson.M
	require.NoError(t, b.env.admin.Database("admin").RunCommand(b.ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info))
	_, ferret := info["ferretdbVersion"]
	require.Equal(t, ferret, s.WriteGuards())
}

func TestUpdateWithoutWriteGuards(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.env.open(t, b.env.newDatabase(t), nil)
	s.SetWriteGuards(false) // the MongoDB path, one filtered ReplaceOne

	job := b.newJob("")
	require.NoError(t, s.JobInsertMany(b.ctx, &dispatch.JobInsertManyParams{Jobs: []*dispatch.Job{job}}))
	stale := *job
	job.Worker = "w-1"
	require.NoError(t, s.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: job}))
	require.Equal(t, int64(2), job.Version)
	require.ErrorIs(t, s.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: &stale}), store.ErrConflict)
	require.Equal(t, int64(1), stale.Version)
	missing := b.newJob("")
	missing.Version = 1
	require.ErrorIs(t, s.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: missing}), store.ErrNotFound)
	got, err := s.JobGetByID(b.ctx, job.ID)
	require.NoError(t, err)
	require.Equal(t, job, got)

	et := &schema.EventType{Code: "order.created", Status: schema.TypeCurrent, CreatedAt: baseTime(), UpdatedAt: baseTime()}
	require.NoError(t, s.EventTypeInsert(b.ctx, et))
	staleType := *et
	et.Name = "renamed"
	require.NoError(t, s.EventTypeUpdate(b.ctx, et))
	require.Equal(t, int64(2), et.Revision)
	require.ErrorIs(t, s.EventTypeUpdate(b.ctx, &staleType), store.ErrConflict)
	require.ErrorIs(t, s.EventTypeUpdate(b.ctx, &schema.EventType{Code: "nope", Revision: 1}), store.ErrNotFound)
}

func TestMapKeysThatAreNotFieldNames(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.env.open(t, b.env.newDatabase(t), nil)
	headers := map[string]string{"X.Dotted": "1", "$Dollar": "2", "X-Plain": "3"}

	job := b.newJob("")
	job.Headers = headers
	require.NoError(t, s.JobInsertMany(b.ctx, &dispatch.JobInsertManyParams{Jobs: []*dispatch.Job{job}}))
	got, err := s.JobGetByID(b.ctx, job.ID)
	require.NoError(t, err)
	require.Equal(t, headers, got.Headers)

	sub := &subscription.Subscription{ID: b.ids.New(), Code: "s", Headers: headers, CreatedAt: baseTime(), UpdatedAt: baseTime()}
	require.NoError(t, s.SubscriptionInsert(b.ctx, sub))
	gotSub, err := s.SubscriptionGetByID(b.ctx, sub.ID)
	require.NoError(t, err)
	require.Equal(t, headers, gotSub.Headers)

	// Ingest refuses such extension names; the store still keeps them.
	ev := b.newEvent()
	ev.Event.Extensions = map[string]any{"a.b": "x", "$c": "y", "tenant": "acme"}
	_, err = s.EventIngest(b.ctx, &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{{Event: ev}}})
	require.NoError(t, err)
	gotEv, err := s.EventGetByID(b.ctx, ev.ID)
	require.NoError(t, err)
	require.Equal(t, ev.Event.Extensions, gotEv.Event.Extensions)
}

// proxy is a loopback TCP relay to the test server whose stop cuts every
// connection, so a test can lose the server without stopping it.
type proxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup
	once   sync.Once

	mu     sync.Mutex
	closed bool
	conns  []net.Conn
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.serve(t.Context())
	t.Cleanup(p.stop)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve(ctx context.Context) {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // the listener is closed: stopped
		}
		up, err := new(net.Dialer).DialContext(ctx, "tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		if !p.track(c, up) {
			return
		}
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

// track records a relayed pair; once stopped it closes them and says false.
func (p *proxy) track(a, b net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = a.Close()
		_ = b.Close()
		return false
	}
	p.conns = append(p.conns, a, b)
	return true
}

// pipe copies until either side is closed, then closes both.
func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
}

// stop closes the listener and every relayed connection and waits for the
// relay goroutines to end.
func (p *proxy) stop() {
	p.once.Do(func() {
		p.mu.Lock()
		p.closed = true
		conns := p.conns
		p.conns = nil
		p.mu.Unlock()
		_ = p.ln.Close()
		for _, c := range conns {
			_ = c.Close()
		}
		p.wg.Wait()
	})
}

// TestSubscriptionStoredWithoutVersionGetsOne: a subscription stored before
// versions existed (no "version" field) is given version 0 when a store
// opens the database, so that it can be updated (the version check needs
// the version it read).
func TestSubscriptionStoredWithoutVersionGetsOne(t *testing.T) {
	t.Parallel()
	b := setup(t)
	db := b.env.newDatabase(t)
	first := b.env.open(t, db, nil)
	sub := &subscription.Subscription{
		ID: b.ids.New(), Code: "legacy", Status: subscription.StatusActive, Target: "http://127.0.0.1:9/hook",
		Mode: dispatch.ModeImmediate, Delivery: dispatch.DeliveryPush, TimeoutSeconds: 10,
		CreatedAt: baseTime(), UpdatedAt: baseTime(),
	}
	require.NoError(t, first.SubscriptionInsert(b.ctx, sub))
	_, err := b.env.admin.Database(db).Collection("subscriptions").UpdateOne(b.ctx,
		bson.D{{Key: "_id", Value: sub.ID}}, bson.D{{Key: "$unset", Value: bson.D{{Key: "version", Value: ""}}}})
	require.NoError(t, err)

	second := b.env.open(t, db, nil) // prepares the database again
	got, err := second.SubscriptionGetByID(b.ctx, sub.ID)
	require.NoError(t, err)
	require.Equal(t, int64(0), got.Version)
	got.Name = "updated"
	require.NoError(t, second.SubscriptionUpdate(b.ctx, got))
	require.Equal(t, int64(1), got.Version)
}
