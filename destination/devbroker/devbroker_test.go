package devbroker_test

import (
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination"
	"github.com/hooklane/hooklane/destination/devbroker"
	"github.com/hooklane/hooklane/destination/kafka"
	"github.com/hooklane/hooklane/destination/nats"
	"github.com/hooklane/hooklane/destination/pubsub"
)

// TestEachBrokerTakesWhatItsDestinationPublishes: each development
// broker's Destination, decoded and opened by the destination type the
// gateway uses, publishes a delivery that the broker's consumer hands on
// with its body, its key (Kafka, Pub/Sub) and its job id header — and a
// NATS subject below the configured one (the README's orders.created)
// lands in the stream too.
func TestEachBrokerTakesWhatItsDestinationPublishes(t *testing.T) {
	t.Parallel()
	types := map[string]destination.Type{devbroker.Kafka: kafka.Type{}, devbroker.NATS: nats.Type{}, devbroker.PubSub: pubsub.Type{}}
	for _, name := range devbroker.Types() {
		typ := types[name]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := make(chan *devbroker.Message, 4)
			b, err := devbroker.Start(t.Context(), &devbroker.Config{
				Type: name, Name: "orders", OnMessageFunc: func(m *devbroker.Message) { got <- m },
			})
			require.NoError(t, err)
			t.Cleanup(b.Close)
			require.Contains(t, string(b.Destination), b.Addr)

			raw := b.Destination
			if name == devbroker.NATS {
				raw = []byte(`{"type":"nats","url":"nats://` + b.Addr + `","subject":"orders.created"}`)
			}
			cfg, err := typ.Decode(raw)
			require.NoError(t, err)
			var d net.Dialer
			pub, err := typ.Open(t.Context(), cfg, &destination.OpenOptions{Dial: d.DialContext, ConnectTimeout: 10 * time.Second, Logger: slog.Default()})
			require.NoError(t, err)
			t.Cleanup(func() { _ = pub.Close() })
			event := `{"specversion":"1.0","id":"e1","source":"/shop","type":"shop.order.created","data":{"n":1}}`
			m, err := destination.NewMessage(typ.Binding(), &destination.Envelope{
				Event: []byte(event), JobID: "job-1", Attempt: 1, Group: "orders-sub:customer-7",
			})
			require.NoError(t, err)
			_, err = pub.Publish(t.Context(), m)
			require.NoError(t, err)

			select {
			case r := <-got:
				require.Equal(t, name, r.Type)
				require.JSONEq(t, event, string(r.Body))
				if name != devbroker.NATS {
					require.Equal(t, "orders-sub:customer-7", r.Key)
					require.Equal(t, "job-1", r.Headers["hooklane-job-id"])
				} else {
					require.Equal(t, "job-1", r.Headers["Nats-Msg-Id"])
				}
			case <-time.After(30 * time.Second):
				require.FailNow(t, "the broker's consumer got nothing")
			}
		})
	}
}

// TestStartRefusesWhatItCannotRun: an unknown type, and a missing name
// or callback, are errors, not a half-started broker.
func TestStartRefusesWhatItCannotRun(t *testing.T) {
	t.Parallel()
	_, err := devbroker.Start(t.Context(), &devbroker.Config{Type: "sqs", Name: "x", OnMessageFunc: func(*devbroker.Message) {}})
	require.ErrorContains(t, err, "unknown type")
	_, err = devbroker.Start(t.Context(), &devbroker.Config{Type: devbroker.NATS})
	require.Error(t, err)
	_, err = devbroker.Start(t.Context(), &devbroker.Config{Type: devbroker.Kafka, Name: "x", Addr: "nohost", OnMessageFunc: func(*devbroker.Message) {}})
	require.ErrorContains(t, err, "address")
}
