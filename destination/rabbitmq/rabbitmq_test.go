package rabbitmq_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination"
	"github.com/hooklane/hooklane/destination/rabbitmq"
	"github.com/hooklane/hooklane/destination/transporttest"
)

var _ destination.Type = rabbitmq.Type{}

// brokerURL is the local stack's RabbitMQ (localstack/stack.sh env).
func brokerURL(t *testing.T) *url.URL {
	t.Helper()
	raw := os.Getenv("HOOKLANE_TEST_AMQP_URL")
	if raw == "" {
		t.Fatal("HOOKLANE_TEST_AMQP_URL is unset: the local stack starts RabbitMQ (bash localstack/stack.sh start; eval \"$(bash localstack/stack.sh env)\"), as make test does")
	}
	u, err := url.Parse(raw)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", u.Hostname(), "the test broker is on loopback")
	return u
}

// TestConformance runs the transport suite on the local stack's
// RabbitMQ, each test on an exchange and queue of its own.
func TestConformance(t *testing.T) {
	t.Parallel()
	base := brokerURL(t)
	admin := dial(t, base.String())
	prefix := fmt.Sprintf("hl-%d", time.Now().UnixNano())
	var n atomic.Int64
	transporttest.Run(t, &transporttest.Harness{
		Type: rabbitmq.Type{},
		Features: transporttest.Features{
			Binary:      true,
			AttrPrefix:  "cloudEvents:",
			ContentType: "property:content_type",
			JobID:       "property:message_id",
			MaxBody:     1 << 20,
		},
		NewTarget: func(t *testing.T, _ transporttest.TargetOptions) *transporttest.Target {
			t.Helper()
			return target(t, admin, base.String(), fmt.Sprintf("%s-%d", prefix, n.Add(1)))
		},
		NewOutage: func(t *testing.T) *transporttest.Outage {
			t.Helper()
			p := transporttest.NewProxy(t, base.Host)
			via := *base
			via.Host = p.Addr()
			return &transporttest.Outage{Target: target(t, admin, via.String(), fmt.Sprintf("%s-%d", prefix, n.Add(1))), Stop: p.Stop, Start: p.Start}
		},
		NewMissing: func(t *testing.T) json.RawMessage {
			t.Helper()
			return raw(base.String(), fmt.Sprintf("%s-missing-%d", prefix, n.Add(1)))
		},
		NewRefused: func(t *testing.T) (json.RawMessage, string) {
			t.Helper()
			const wrong = "Wr0ng-Pa55w0rd"
			u := *base
			u.User = url.UserPassword(base.User.Username(), wrong)
			return raw(u.String(), "amq.direct"), wrong
		},
		AtAddress: func(t *testing.T, addr, secret string) json.RawMessage {
			t.Helper()
			return raw("amqp://guest:"+secret+"@"+addr+"/", "orders")
		},
	})
}

// TestUnroutableIsAFailure: a message no queue takes comes back
// (mandatory) and the attempt fails, retryable.
func TestUnroutableIsAFailure(t *testing.T) {
	t.Parallel()
	base := brokerURL(t)
	admin := dial(t, base.String())
	exchange := fmt.Sprintf("hl-unroutable-%d", time.Now().UnixNano())
	declare(t, admin, exchange, "")
	reg := destination.NewRegistry(rabbitmq.Type{})
	d, err := reg.Decode(&destination.DecodeParams{Raw: raw(base.String(), exchange)})
	require.NoError(t, err)
	clients := destination.NewClients(destination.ClientsConfig{})
	t.Cleanup(clients.Close)
	m, err := destination.NewMessage(rabbitmq.Type{}.Binding(), &destination.Envelope{Event: []byte(`{"type":"nobody.listens"}`), JobID: "job-u", Attempt: 1})
	require.NoError(t, err)
	_, err = clients.Publish(t.Context(), d, m)
	require.ErrorContains(t, err, "returned unroutable")
	require.False(t, destination.IsPermanent(err))
}

func TestDecode(t *testing.T) {
	t.Parallel()
	reg := destination.NewRegistry(rabbitmq.Type{})
	for rawJSON, want := range map[string]string{
		`{"type": "rabbitmq", "url": "http://h/", "exchange": "x"}`: "/destination/url",
		`{"type": "rabbitmq", "url": "amqp://h/"}`:                  "/destination/exchange",
		`{"type": "rabbitmq", "exchange": "x"}`:                     "/destination/url",
	} {
		_, err := reg.Decode(&destination.DecodeParams{Raw: json.RawMessage(rawJSON)})
		var ve *destination.ValidationError
		require.ErrorAs(t, err, &ve, rawJSON)
		require.Equal(t, want, ve.Problems[0].Pointer, rawJSON)
	}
	d, err := reg.Decode(&destination.DecodeParams{Raw: json.RawMessage(`{"type": "rabbitmq", "url": "amqps://hooklane:s3cret@rabbit.example/prod", "exchange": "orders"}`)})
	require.NoError(t, err)
	require.Equal(t, "amqp://rabbit.example:5671/orders", d.TargetURL())
	require.JSONEq(t, `{"type": "rabbitmq", "url": "amqps://hooklane:***@rabbit.example/prod", "exchange": "orders"}`, string(d.Masked()))
}

// target declares exchange name with queue name bound by the event type,
// consumes the queue, and returns a destination at url.
func target(t *testing.T, admin *amqp.Connection, brokerURL, name string) *transporttest.Target {
	t.Helper()
	ch := declare(t, admin, name, name)
	deliveries, err := ch.Consume(name, "", true, true, false, false, nil)
	require.NoError(t, err)
	return &transporttest.Target{
		Raw: raw(brokerURL, name),
		Receive: func(t *testing.T) *transporttest.Received {
			t.Helper()
			select {
			case d, ok := <-deliveries:
				require.True(t, ok, "the consumer's channel closed")
				r := &transporttest.Received{Body: d.Body, Headers: map[string]string{}, Properties: map[string]string{"content_type": d.ContentType, "message_id": d.MessageId}}
				for k, v := range d.Headers {
					r.Headers[k] = fmt.Sprint(v)
				}
				return r
			case <-time.After(transporttest.ReceiveDeadline):
				require.FailNow(t, "no message before the deadline")
				return nil
			}
		},
	}
}

// declare declares a direct exchange and, when queue is set, a queue
// bound to it by the suite's event type; both go with the test.
func declare(t *testing.T, admin *amqp.Connection, exchange, queue string) *amqp.Channel {
	t.Helper()
	ch, err := admin.Channel()
	require.NoError(t, err)
	t.Cleanup(func() { _ = ch.Close() })
	require.NoError(t, ch.ExchangeDeclare(exchange, "direct", false, true, false, false, nil))
	if queue != "" {
		_, err = ch.QueueDeclare(queue, false, true, false, false, nil)
		require.NoError(t, err)
		require.NoError(t, ch.QueueBind(queue, "com.example.order.created", exchange, false, nil))
	}
	return ch
}

func dial(t *testing.T, u string) *amqp.Connection {
	t.Helper()
	conn, err := amqp.DialConfig(u, amqp.Config{Dial: amqp.DefaultDial(10 * time.Second)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func raw(u, exchange string) json.RawMessage {
	out, err := json.Marshal(map[string]string{"type": "rabbitmq", "url": strings.TrimSpace(u), "exchange": exchange})
	if err != nil {
		panic(err)
	}
	return out
}
