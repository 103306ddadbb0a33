package router_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/queue"
	"github.com/hooklane/hooklane/subscription"
)

// snapshotFixture stores a subscription to srv and one event with one
// QUEUED job of it, not yet sent.
func snapshotFixture(t *testing.T, g *gw, code, target string) (*dispatch.Job, *event.Event) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	sub := &subscription.Subscription{
		ID: g.ids.New(), Code: code, Target: target,
		EventTypes: []subscription.Binding{{EventTypeCode: "shop:order:created"}},
		Secrets:    []subscription.Secret{{Value: subscription.NewSecret()}}, CreatedAt: now, UpdatedAt: now,
	}
	sub.ApplyDefaults()
	require.NoError(t, g.st.SubscriptionInsert(ctx, sub))
	ev := &event.Event{ID: g.ids.New(), ReceivedAt: now, DedupKey: "/shop\x00" + code, Event: cloudevent.Event{
		SpecVersion: "1.0", ID: "e1", Source: "/shop", Type: "shop:order:created", Time: now,
		DataContentType: "application/json", Data: json.RawMessage(`{"id": 1, "note": "<b>"}`),
	}}
	j := &dispatch.Job{
		ID: g.ids.New(), Kind: dispatch.KindEvent, Code: "shop:order:created", EventID: ev.ID, SubscriptionID: sub.ID,
		Subscription: sub.Code, TargetURL: target, Mode: dispatch.ModeImmediate, Delivery: dispatch.DeliveryPush,
		DispatchPoolID: g.def.ID, TimeoutSeconds: 5, MaxAgeSeconds: 3600, Retry: sub.Retry, Status: dispatch.StatusQueued,
		MaxAttempts: sub.Retry.MaxAttempts, Attempts: []dispatch.Attempt{}, CreatedAt: now, UpdatedAt: now,
	}
	_, err := g.st.EventIngest(ctx, &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{{Event: ev, Jobs: []*dispatch.Job{j}}}})
	require.NoError(t, err)
	return j, ev
}

// bodyRecorder counts deliveries and keeps the last body.
type bodyRecorder struct {
	n    atomic.Int64
	mu   sync.Mutex
	body []byte
}

func (rc *bodyRecorder) server(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.body = b
		rc.mu.Unlock()
		rc.n.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestSnapshotDeliveryReadsNothingBeforeTheClaim: a job whose message
// carries its snapshot and its event is claimed and delivered without a
// point read of the job or of the event; the body delivered is the stored
// event's, byte for byte. A message of an earlier version (the id alone)
// is still delivered, from reads.
func TestSnapshotDeliveryReadsNothingBeforeTheClaim(t *testing.T) {
	t.Parallel()
	var rc bodyRecorder
	srv := rc.server(t)
	reads := &readCounter{}
	g := newGW(t, gwOptions{reads: reads})
	ctx := context.Background()

	j, ev := snapshotFixture(t, g, "orders", srv.URL)
	_, err := g.jobs.Send(ctx, []*dispatch.Job{j}, ev)
	require.NoError(t, err)
	done := g.waitStatus(j.ID, dispatch.StatusCompleted, 60*time.Second)
	require.Equal(t, 1, done.AttemptCount)
	require.EqualValues(t, 1, rc.n.Load())
	require.Zero(t, reads.jobs.Load(), "the job was read before its claim")
	require.Zero(t, reads.events.Load(), "the event was read though its message carried it")
	rc.mu.Lock()
	require.Contains(t, string(rc.body), `"data":{"id": 1, "note": "<b>"}`, "the delivered data is not the stored bytes")
	rc.mu.Unlock()

	// The same job's message as an earlier version wrote it: the id alone.
	old, _ := snapshotFixture(t, g, "orders-v1", srv.URL)
	m := dispatch.Message(old, nil)
	m.Body = []byte(old.ID)
	res, err := g.q.SendBatch(ctx, []queue.OutMessage{m})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	g.waitStatus(old.ID, dispatch.StatusCompleted, 60*time.Second)
	require.Positive(t, reads.jobs.Load(), "a message without a snapshot is delivered from a read")
	require.Positive(t, reads.events.Load())
}

// TestStaleSnapshotIsReadAgain: a job written after its message was sent
// (still QUEUED, a newer version) fails the claim from its snapshot; the
// router reads it and delivers it once.
func TestStaleSnapshotIsReadAgain(t *testing.T) {
	t.Parallel()
	var rc bodyRecorder
	srv := rc.server(t)
	reads := &readCounter{}
	g := newGW(t, gwOptions{reads: reads, noRouter: true})
	ctx := context.Background()

	j, ev := snapshotFixture(t, g, "orders", srv.URL)
	_, err := g.jobs.Send(ctx, []*dispatch.Job{j}, ev)
	require.NoError(t, err)
	cur := g.job(j.ID)
	cur.Touch(time.Now())
	require.NoError(t, g.st.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: cur}))
	require.Equal(t, int64(2), cur.Version)

	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = g.rt.Run(runCtx) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	done := g.waitStatus(j.ID, dispatch.StatusCompleted, 60*time.Second)
	require.Equal(t, 1, done.AttemptCount)
	require.Positive(t, reads.jobs.Load(), "the stale snapshot was not read again")
	// The one attempt recorded is the one delivery: a second claim of the
	// job would have met the first's version and been refused.
	require.EqualValues(t, 1, rc.n.Load(), "delivered more than once")
}
