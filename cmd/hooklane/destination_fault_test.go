package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo" //nolint:depguard // the fault test reads back, from an in-process broker, what the gateway published
)

// TestFaultGatewayKilledKafkaDestination is TestFaultGatewayKilledEmbedded
// with a kafka destination instead of an HTTP target (issue 31): the
// embedded gateway is SIGKILLed under load and restarted on its data
// directory, and every accepted event reaches the topic (0 lost; a
// redelivery is a duplicate record with the same job id).
func TestFaultGatewayKilledKafkaDestination(t *testing.T) {
	t.Parallel()
	bin := hooklaneBinary.get(t)
	seed := newKafka(t, "fault")
	recv := &countingReceiver{seen: map[string]int{}, refused: map[string]int{}}
	consumeInto(t, seed, "fault", recv)
	env := faultEnv(map[string]string{"HOOKLANE_DATA_DIR": t.TempDir()})

	p := startProcess(t, bin, "kafka-destination", env)
	typ, probe := setupDestinationFault(t, p, seed, "fault")
	l := newFaultLoad(t, typ, p, probe)
	const total = 3000
	loaded := make(chan struct{})
	go func() {
		defer close(loaded)
		l.run(t.Context(), 8, 10, total, 0)
	}()
	l.waitAccepted(t, total*2/5)
	p.kill()
	t.Logf("killed the gateway after %d accepted events", l.count.Load())
	l.target.Store(startProcess(t, bin, "kafka-destination-restarted", env))
	<-loaded
	accepted, others, _ := l.snapshot()
	require.Len(t, accepted, total+1)
	t.Logf("answers other than 201/200 while it was down: %v", others)
	requireDelivered(t, recv, accepted, 90*time.Second)
}

// setupDestinationFault registers the fault type and a subscription with
// a kafka destination, and waits until an event gets a job (setupFault
// with a destination).
func setupDestinationFault(t *testing.T, p *process, seed, topic string) (typ, probeID string) {
	t.Helper()
	return setupFaultTo(t, p, `"destination":{"type":"kafka","brokers":["`+seed+`"],"topic":"`+topic+`"}`)
}

// consumeInto counts, in recv, the CloudEvents id of every record of
// topic, until the test ends.
func consumeInto(t *testing.T, seed, topic string, recv *countingReceiver) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
		cl.Close()
	})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			for _, r := range cl.PollFetches(ctx).Records() {
				var ce struct {
					ID string `json:"id"`
				}
				if json.Unmarshal(r.Value, &ce) != nil || ce.ID == "" {
					continue
				}
				recv.mu.Lock()
				recv.seen[ce.ID]++
				recv.mu.Unlock()
				recv.total.Add(1)
			}
		}
	}()
}
