package metrics_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/api/metrics"
	"github.com/hooklane/hooklane/dispatch"
)

// TestDestinationLabel: attempts are labelled webhook for an HTTP target,
// by type for a destination (its targetUrl's scheme, API.md §15; rabbitmq
// for a RabbitMQ destination's amqp:// targetUrl, never amqp), and the
// label set is bounded.
func TestDestinationLabel(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{})
	observe := func(target string) {
		m.ObserveAttempt(&dispatch.Job{Status: dispatch.StatusCompleted, TargetURL: target}, dispatch.Outcome{Attempted: true})
	}
	observe("https://example.com/hook")
	observe("http://127.0.0.1:9/hook")
	observe("kafka://127.0.0.1:9092/orders")
	observe("nats://127.0.0.1:4222/orders.created")
	observe("amqp://127.0.0.1:5672/orders")
	observe("AMQPS://rabbit.example.com:5671/")
	observe("sqs://orders.fifo")
	observe("pubsub://proj/orders")
	observe("not a url")
	require.InDelta(t, 2, value(t, m, "hooklane_deliveries_total", "destination", "webhook"), 0)
	require.InDelta(t, 1, value(t, m, "hooklane_deliveries_total", "destination", "kafka", "status_class", "none"), 0)
	require.InDelta(t, 1, value(t, m, "hooklane_delivery_duration_seconds", "destination", "nats"), 0)
	require.InDelta(t, 1, value(t, m, "hooklane_deliveries_total", "destination", "other"), 0)
	require.InDelta(t, 2, value(t, m, "hooklane_deliveries_total", "destination", "rabbitmq"), 0)
	require.InDelta(t, 1, value(t, m, "hooklane_deliveries_total", "destination", "sqs"), 0)
	require.InDelta(t, 1, value(t, m, "hooklane_deliveries_total", "destination", "pubsub"), 0)

	for i := range 3 * metrics.DestinationLabelMax {
		observe("type" + strconv.Itoa(i) + "://x/y")
	}
	labels := map[string]bool{}
	mfs, err := m.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "hooklane_deliveries_total" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "destination" {
					labels[l.GetValue()] = true
				}
			}
		}
	}
	require.LessOrEqual(t, len(labels), metrics.DestinationLabelMax+2, "webhook and other beside the capped set: %v", labels)
	require.False(t, labels["amqp"] || labels["amqps"], "a RabbitMQ destination is labelled by its type, not its scheme: %v", labels)
}
