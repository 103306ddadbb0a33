package broker_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server" //nolint:depguard // the transport's test reads back, from an in-process broker, what it published
	natsgo "github.com/nats-io/nats.go"        //nolint:depguard // (see above)
	"github.com/nats-io/nats.go/jetstream"     //nolint:depguard // (see above)
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/hooklane/hooklane/destination"
	"github.com/hooklane/hooklane/destination/kafka"
	"github.com/hooklane/hooklane/destination/nats"
	"github.com/hooklane/hooklane/destination/rabbitmq"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/router/broker"
	"github.com/hooklane/hooklane/subscription"
)

type testBundle struct {
	transport *broker.Transport
	url       string
	nc        *natsgo.Conn
	spans     *tracetest.SpanRecorder
	tracer    trace.Tracer
}

func setup(t *testing.T, opts ...func(*broker.Config)) *testBundle {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	require.NoError(t, err)
	go s.Start()
	require.True(t, s.ReadyForConnections(10*time.Second))
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	nc, err := natsgo.Connect(s.ClientURL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	_, err = js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Storage: jetstream.MemoryStorage})
	require.NoError(t, err)

	clients := destination.NewClients(destination.ClientsConfig{})
	t.Cleanup(clients.Close)
	reg := destination.NewRegistry(nats.Type{}, kafka.Type{}, rabbitmq.Type{})
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	cfg := broker.Config{Registry: reg, Clients: clients}
	for _, o := range opts {
		o(&cfg)
	}
	return &testBundle{
		transport: broker.New(cfg),
		url:       s.ClientURL(), nc: nc, spans: spans, tracer: tp.Tracer("test"),
	}
}

func (b *testBundle) delivery(t *testing.T, subject string, dataOnly bool) *router.Delivery {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"type": "nats", "url": b.url, "subject": subject})
	require.NoError(t, err)
	return &router.Delivery{
		Job: &dispatch.Job{
			ID: "job-1", TimeoutSeconds: 5, MessageGroup: "orders:order:1", DataOnly: dataOnly,
			Headers: map[string]string{"X-Team": "orders"}, TargetURL: "nats://" + b.url[len("nats://"):] + "/" + subject,
		},
		Event: &event.Event{ID: "ev-1", Event: cloudevent.Event{
			SpecVersion: "1.0", ID: "e-1", Source: "/shop", Type: "shop.order.created", Subject: "order:1",
			Time: time.Date(2026, 1, 24, 14, 0, 0, 0, time.UTC), Data: json.RawMessage(`{"n":1}`),
		}},
		Subscription: &subscription.Subscription{Code: "orders", Destination: raw},
		Attempt:      2,
	}
}

// TestDeliverPublishes: the message carries §15's metadata and the
// attempt span's traceparent; the outcome records the broker's answer and
// no status code; the span is named for the broker with the messaging
// conventions.
func TestDeliverPublishes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inbox, err := b.nc.SubscribeSync("orders.created")
	require.NoError(t, err)
	require.NoError(t, b.nc.Flush())

	ctx, span := b.tracer.Start(t.Context(), "deliver", trace.WithSpanKind(trace.SpanKindClient))
	out := b.transport.Deliver(ctx, b.delivery(t, "orders.created", true))
	span.End()
	require.NoError(t, out.Err)
	require.True(t, out.Attempted)
	require.Zero(t, out.Attempt.StatusCode)
	require.NotEmpty(t, out.Attempt.ResponseBody, "the broker's answer")

	msg, err := inbox.NextMsg(10 * time.Second)
	require.NoError(t, err)
	require.JSONEq(t, `{"n":1}`, string(msg.Data))
	require.Equal(t, "job-1", msg.Header.Get("Nats-Msg-Id"))
	require.Equal(t, "2", msg.Header.Get("hooklane-attempt"))
	require.Equal(t, "e-1", msg.Header.Get("ce-id"))
	require.Equal(t, "orders", msg.Header.Get("X-Team"))
	sc := span.SpanContext()
	require.Equal(t, "00-"+sc.TraceID().String()+"-"+sc.SpanID().String()+"-01", msg.Header.Get("traceparent"))

	ended := b.spans.Ended()
	require.Len(t, ended, 1)
	require.Equal(t, "send orders.created", ended[0].Name())
	require.Equal(t, trace.SpanKindClient, ended[0].SpanKind())
	attrs := map[attribute.Key]string{}
	for _, kv := range ended[0].Attributes() {
		attrs[kv.Key] = kv.Value.AsString()
	}
	require.Equal(t, "nats", attrs["messaging.system"])
	require.Equal(t, "send", attrs["messaging.operation.type"])
	require.Equal(t, "orders.created", attrs["messaging.destination.name"])
	require.Equal(t, "job-1", attrs["messaging.message.id"])
	require.Equal(t, "127.0.0.1", attrs["server.address"])
}

// TestDeliverFailureIsARetryableAttempt: a subject no stream takes is a
// failed attempt, retryable, with no status code and the broker's text.
func TestDeliverFailureIsARetryableAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	out := b.transport.Deliver(t.Context(), b.delivery(t, "nostream.created", false))
	require.True(t, out.Attempted)
	require.Error(t, out.Err)
	require.False(t, dispatch.IsPermanent(out.Err))
	require.Zero(t, out.Attempt.StatusCode)
	_, ok := errors.AsType[*destination.PublishError](out.Err)
	require.True(t, ok, "%v", out.Err)
}

// TestDeliverWithoutDestination: a job whose subscription has none (it
// moved to an HTTP target) is a permanent failure with nothing sent.
func TestDeliverWithoutDestination(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.delivery(t, "orders.created", false)
	d.Subscription.Destination = nil
	out := b.transport.Deliver(t.Context(), d)
	require.False(t, out.Attempted)
	require.True(t, dispatch.IsPermanent(out.Err))
	d.Subscription.Destination = json.RawMessage(`{"type":"pigeon"}`)
	out = b.transport.Deliver(t.Context(), d)
	require.True(t, dispatch.IsPermanent(out.Err))
}

// TestRegister: the transport takes the scheme of every registered
// type's targetUrl.
func TestRegister(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ts := router.Transports{}
	b.transport.Register(ts)
	require.Len(t, ts, 3)
	require.Equal(t, b.transport, ts["nats"])
	require.Equal(t, b.transport, ts["kafka"])
	require.Equal(t, b.transport, ts["amqp"], "rabbitmq's targetUrl is amqp://…")
}
