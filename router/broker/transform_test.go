package broker_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go" //nolint:depguard // the transport's test reads back, from an in-process broker, what it published
	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/router/broker"
	"github.com/hooklane/hooklane/router/transformrun"
	"github.com/hooklane/hooklane/subscription"
	"github.com/hooklane/hooklane/subscription/transform"
)

// runLog collects what OnTransformFunc is told.
type runLog struct {
	mu   sync.Mutex
	runs []transformrun.Run
}

func (l *runLog) add(r transformrun.Run) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = append(l.runs, r)
}

func (l *runLog) all() []transformrun.Run {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]transformrun.Run(nil), l.runs...)
}

// setupTransform is a bundle whose transport runs transformations and
// reports them to the returned log.
func setupTransform(t *testing.T) (*testBundle, *runLog) {
	t.Helper()
	log := &runLog{}
	b := setup(t, func(cfg *broker.Config) {
		cfg.Transform = transform.New(transform.Config{Timeout: 2 * time.Second})
		cfg.OnTransformFunc = log.add
	})
	return b, log
}

// transformed is the delivery of b.delivery with an enabled transformation.
func (b *testBundle) transformed(t *testing.T, subject string, dataOnly bool, code string) *router.Delivery {
	t.Helper()
	d := b.delivery(t, subject, dataOnly)
	d.Subscription.ID = "sub-" + subject
	d.Subscription.Transformation = &subscription.Transformation{Code: code}
	return d
}

// requireNothingPublished: a sentinel published after the delivery is the
// first message the subject's subscriber gets. A publish by the transport
// would have reached the server before Deliver returned (JetStream answers
// once it has the message), so it would come first.
func requireNothingPublished(t *testing.T, b *testBundle, inbox *natsgo.Subscription, subject string) {
	t.Helper()
	require.NoError(t, b.nc.Publish(subject, []byte("sentinel")))
	msg, err := inbox.NextMsg(10 * time.Second)
	require.NoError(t, err)
	require.Equal(t, "sentinel", string(msg.Data), "the transport published a message")
}

// TestDeliverTransformedStructured: a transformation that renames the
// payload's fields and adds a header publishes its payload as the message
// body (application/json, in place of the CloudEvent) with its headers
// as the custom headers; the delivery metadata stays; the run is reported.
func TestDeliverTransformedStructured(t *testing.T) {
	t.Parallel()
	b, log := setupTransform(t)
	inbox, err := b.nc.SubscribeSync("orders.created")
	require.NoError(t, err)
	require.NoError(t, b.nc.Flush())

	d := b.transformed(t, "orders.created", false, `function handler(w) {
		var h = w.headers;
		h["x-source"] = "transform";
		return {payload: {orderId: w.payload.data.n, kind: w.payload.type, url: w.url === undefined ? "none" : w.url}, headers: h};
	}`)
	out := b.transport.Deliver(t.Context(), d)
	require.NoError(t, out.Err)
	require.True(t, out.Attempted)

	msg, err := inbox.NextMsg(10 * time.Second)
	require.NoError(t, err)
	require.JSONEq(t, `{"orderId":1,"kind":"shop.order.created","url":"none"}`, string(msg.Data), "the handler gets no url for a destination")
	require.Equal(t, "application/json", msg.Header.Get("content-type"))
	require.Equal(t, "transform", msg.Header.Get("x-source"))
	require.Equal(t, "orders", msg.Header.Get("x-team"))
	require.Equal(t, "job-1", msg.Header.Get("Nats-Msg-Id"))
	require.Equal(t, "2", msg.Header.Get("hooklane-attempt"))
	runs := log.all()
	require.Len(t, runs, 1)
	require.Empty(t, runs[0].Failure)
	require.False(t, runs[0].Cancelled)
}

// TestDeliverTransformedBinary: with dataOnly the handler's payload is the
// data; a string it returns is the data body as it is (text/plain), the
// CloudEvents attributes still travel as headers, and a header it deletes
// is not sent.
func TestDeliverTransformedBinary(t *testing.T) {
	t.Parallel()
	b, _ := setupTransform(t)
	inbox, err := b.nc.SubscribeSync("orders.paid")
	require.NoError(t, err)
	require.NoError(t, b.nc.Flush())

	d := b.transformed(t, "orders.paid", true, `function handler(w) {
		return {payload: "n=" + w.payload.n, headers: {"x-kind": "text"}};
	}`)
	out := b.transport.Deliver(t.Context(), d)
	require.NoError(t, out.Err)

	msg, err := inbox.NextMsg(10 * time.Second)
	require.NoError(t, err)
	require.Equal(t, "n=1", string(msg.Data))
	require.Equal(t, "text/plain; charset=utf-8", msg.Header.Get("content-type"))
	require.Equal(t, "text", msg.Header.Get("x-kind"))
	require.Empty(t, msg.Header.Get("X-Team"))
	require.Empty(t, msg.Header.Get("x-team"))
	require.Equal(t, "e-1", msg.Header.Get("ce-id"))
	require.Equal(t, "shop.order.created", msg.Header.Get("ce-type"))
}

// TestDeliverTransformCancelled: cancel publishes nothing and cancels the
// job with no attempt.
func TestDeliverTransformCancelled(t *testing.T) {
	t.Parallel()
	b, log := setupTransform(t)
	inbox, err := b.nc.SubscribeSync("orders.created")
	require.NoError(t, err)
	require.NoError(t, b.nc.Flush())

	out := b.transport.Deliver(t.Context(), b.transformed(t, "orders.created", false, `function handler(w) { w.cancel = true; return w; }`))
	require.False(t, out.Attempted)
	require.NoError(t, out.Err)
	require.Equal(t, transformrun.CancelledReason, out.Cancelled)
	requireNothingPublished(t, b, inbox, "orders.created")
	runs := log.all()
	require.Len(t, runs, 1)
	require.True(t, runs[0].Cancelled)
}

// TestDeliverTransformFails: a handler that throws, or that sets a url or
// another method (a webhook's), is a failed attempt, permanent (not
// retried, and not counted toward the circuit: the lifecycle counts no
// permanent failure), with the error and its line in the attempt's error;
// nothing is published.
func TestDeliverTransformFails(t *testing.T) {
	t.Parallel()
	b, log := setupTransform(t)
	inbox, err := b.nc.SubscribeSync("orders.created")
	require.NoError(t, err)
	require.NoError(t, b.nc.Flush())

	for _, tc := range []struct {
		name, code string
		kind       transform.Kind
		line       int
	}{
		{"throw", "function handler(w) {\n  throw new Error(\"no\");\n}", transform.KindThrow, 2},
		{"url", `function handler(w) { w.url = "https://example.com/"; return w; }`, transform.KindInvalidResult, 0},
		{"method", `function handler(w) { w.method = "PUT"; return w; }`, transform.KindInvalidResult, 0},
	} {
		out := b.transport.Deliver(t.Context(), b.transformed(t, "orders.created", false, tc.code))
		require.True(t, out.Attempted, tc.name)
		require.Error(t, out.Err, tc.name)
		require.True(t, dispatch.IsPermanent(out.Err), tc.name)
		require.Empty(t, out.Cancelled, tc.name)
		te, ok := errors.AsType[*transformrun.Error](out.Err)
		require.True(t, ok, "%s: %v", tc.name, out.Err)
		require.Equal(t, tc.kind, te.Kind, tc.name)
		require.Equal(t, tc.line, te.Line, tc.name)
	}
	requireNothingPublished(t, b, inbox, "orders.created")
	runs := log.all()
	require.Len(t, runs, 3)
	require.Equal(t, transform.KindThrow, runs[0].Failure)
}

// TestDeliverTransformationDisabled: a transformation that is off, or a
// transport without an engine, publishes the CloudEvent as §15 builds it.
func TestDeliverTransformationDisabled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inbox, err := b.nc.SubscribeSync("orders.created")
	require.NoError(t, err)
	require.NoError(t, b.nc.Flush())
	out := b.transport.Deliver(t.Context(), b.transformed(t, "orders.created", false, `function handler(w) { w.cancel = true; return w; }`))
	require.NoError(t, out.Err)
	msg, err := inbox.NextMsg(10 * time.Second)
	require.NoError(t, err)
	require.Equal(t, "application/cloudevents+json", msg.Header.Get("content-type"))
}
