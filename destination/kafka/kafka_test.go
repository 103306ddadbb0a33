package kafka_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hooklane/hooklane/destination"
	"github.com/hooklane/hooklane/destination/kafka"
	"github.com/hooklane/hooklane/destination/transporttest"
)

var _ destination.Type = kafka.Type{}

// TestConformance runs the transport suite on franz-go's in-process
// Kafka cluster (kfake), on 127.0.0.1.
func TestConformance(t *testing.T) {
	t.Parallel()
	shared := newCluster(t, 0)
	seed := shared.ListenAddrs()[0]
	var topics atomic.Int64
	transporttest.Run(t, &transporttest.Harness{
		Type: kafka.Type{},
		Features: transporttest.Features{
			Binary:      true,
			AttrPrefix:  "ce_",
			ContentType: "header:content-type",
			JobID:       "header:hooklane-job-id",
			Group:       "property:key",
			Partition:   "property:partition",
			MaxBody:     1 << 20,
		},
		NewTarget: func(t *testing.T, o transporttest.TargetOptions) *transporttest.Target {
			t.Helper()
			topic := fmt.Sprintf("t-%d", topics.Add(1))
			partitions := int32(1)
			if o.Ordered {
				partitions = 6
			}
			createTopic(t, seed, topic, partitions)
			return &transporttest.Target{Raw: raw(seed, topic, ""), Receive: newReader(t, seed, topic).next}
		},
		NewOutage: func(t *testing.T) *transporttest.Outage {
			t.Helper()
			port := freePort(t)
			c := newCluster(t, port, kfake.SeedTopics(1, "outage"))
			addr := c.ListenAddrs()[0]
			var mu sync.Mutex
			reader := newReader(t, addr, "outage")
			return &transporttest.Outage{
				Target: &transporttest.Target{Raw: raw(addr, "outage", ""), Receive: func(t *testing.T) *transporttest.Received {
					t.Helper()
					mu.Lock()
					r := reader
					mu.Unlock()
					return r.next(t)
				}},
				Stop: func(t *testing.T) { t.Helper(); c.Close() },
				Start: func(t *testing.T) {
					t.Helper()
					c = newCluster(t, port, kfake.SeedTopics(1, "outage"))
					mu.Lock()
					reader = newReader(t, addr, "outage")
					mu.Unlock()
				},
			}
		},
		NewMissing: func(t *testing.T) json.RawMessage {
			t.Helper()
			return raw(seed, fmt.Sprintf("missing-%d", topics.Add(1)), "")
		},
		NewRefused: func(t *testing.T) (json.RawMessage, string) {
			t.Helper()
			c := newCluster(t, 0, kfake.EnableSASL(), kfake.Superuser("PLAIN", "hooklane", "the-right-one"), kfake.SeedTopics(1, "auth"))
			const wrong = "Wr0ng-Pa55w0rd"
			return raw(c.ListenAddrs()[0], "auth", wrong), wrong
		},
		AtAddress: func(t *testing.T, addr, secret string) json.RawMessage {
			t.Helper()
			return raw(addr, "topic", secret)
		},
	})
}

// raw is a kafka destination; with a password, SASL PLAIN as hooklane.
func raw(broker, topic, password string) json.RawMessage {
	d := map[string]any{"type": "kafka", "brokers": []string{broker}, "topic": topic}
	if password != "" {
		d["sasl"] = map[string]string{"mechanism": "PLAIN", "username": "hooklane", "password": password}
	}
	out, err := json.Marshal(d)
	if err != nil {
		panic(err)
	}
	return out
}

// newCluster starts a one-broker kfake cluster on 127.0.0.1:port (0: a
// free one), closed with the test.
func newCluster(t *testing.T, port int, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	// kfake listens on 127.0.0.1:port.
	opts = append(opts, kfake.NumBrokers(1))
	if port != 0 {
		opts = append(opts, kfake.Ports(port))
	}
	c, err := kfake.NewCluster(opts...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// freePort returns a 127.0.0.1 port nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

// createTopic creates a topic of partitions partitions.
func createTopic(t *testing.T, seed, topic string, partitions int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed))
	require.NoError(t, err)
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(t.Context(), cl)
	require.NoError(t, err)
	require.NoError(t, kerr.ErrorForCode(resp.Topics[0].ErrorCode))
}

// reader consumes a topic from its start.
type reader struct {
	cl      *kgo.Client
	mu      sync.Mutex
	pending []*kgo.Record
}

func newReader(t *testing.T, seed, topic string) *reader {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return &reader{cl: cl}
}

// next returns the next record, polling until ReceiveDeadline.
func (r *reader) next(t *testing.T) *transporttest.Received {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	ctx, cancel := context.WithTimeout(t.Context(), transporttest.ReceiveDeadline)
	defer cancel()
	for len(r.pending) == 0 {
		fs := r.cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "no record before the deadline")
		fs.EachError(func(topic string, p int32, err error) {
			t.Logf("fetch %s/%d: %v", topic, p, err)
		})
		r.pending = append(r.pending, fs.Records()...)
	}
	rec := r.pending[0]
	r.pending = r.pending[1:]
	got := &transporttest.Received{
		Body:       rec.Value,
		Headers:    map[string]string{},
		Properties: map[string]string{"partition": strconv.Itoa(int(rec.Partition))},
	}
	if rec.Key != nil {
		got.Properties["key"] = string(rec.Key)
	}
	for _, h := range rec.Headers {
		got.Headers[h.Key] = string(h.Value)
	}
	return got
}
