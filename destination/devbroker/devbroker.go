// Package devbroker runs, inside the calling process and on loopback, a
// broker of each destination type that needs no installation — Kafka
// (franz-go's kfake cluster), NATS (nats-server with JetStream) and Google
// Pub/Sub (pstest) — each with a topic, stream or subscription ready and a
// consumer that hands every message to a callback. `hooklane brokers` runs
// them for the README's destination examples and `hooklane bench
// --destination` for its measurements. They keep their data in memory or a
// temporary directory: development and measurement only, never production.
package devbroker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	gpubsub "cloud.google.com/go/pubsub/v2"               //nolint:depguard // devbroker runs the brokers themselves, beside the destination packages that publish to them
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"     //nolint:depguard // (see above)
	"cloud.google.com/go/pubsub/v2/pstest"                //nolint:depguard // (see above)
	natsserver "github.com/nats-io/nats-server/v2/server" //nolint:depguard // (see above)
	natsgo "github.com/nats-io/nats.go"                   //nolint:depguard // (see above)
	"github.com/nats-io/nats.go/jetstream"                //nolint:depguard // (see above)
	"github.com/twmb/franz-go/pkg/kfake"                  //nolint:depguard // (see above)
	"github.com/twmb/franz-go/pkg/kgo"                    //nolint:depguard // (see above)
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// The broker types devbroker runs.
const (
	Kafka  = "kafka"
	NATS   = "nats"
	PubSub = "pubsub"
)

// Types lists the broker types devbroker runs.
func Types() []string { return []string{Kafka, NATS, PubSub} }

// PubSubProject is the Pub/Sub project of the fake.
const PubSubProject = "local-dev"

// pubsubStreams is how many streaming pulls the Pub/Sub consumer opens:
// pstest hands each one message per 10 ms tick, so one stream reads at
// most ≈ 100 messages/s; sixteen read ≈ 1,600/s.
const pubsubStreams = 16

// Message is one message a broker's consumer read.
type Message struct {
	// Type is the broker type.
	Type string
	// Key is the Kafka record key or the Pub/Sub ordering key (empty for
	// NATS).
	Key string
	// Headers are the record headers, message headers or attributes.
	Headers map[string]string
	// Body is the message's body.
	Body []byte
}

// Config configures Start.
type Config struct {
	// Type is Kafka, NATS or PubSub. Required.
	Type string
	// Addr is the broker's listen address, host:port on loopback (Kafka
	// listens on 127.0.0.1 whatever the host); empty: 127.0.0.1 on a free
	// port.
	Addr string
	// Name is the Kafka topic (three partitions), the NATS subject (a
	// JetStream stream takes it and everything below it: Name.>), or the
	// Pub/Sub topic (with a subscription of the same name). Required.
	Name string
	// OnMessageFunc is called with every message the consumer reads, from
	// the consumer's goroutines. Required.
	OnMessageFunc func(m *Message)
}

// Broker is a running broker and its consumer.
type Broker struct {
	// Addr is the address the broker listens on.
	Addr string
	// Destination is a subscription's "destination" (API.md §15) that
	// publishes to the broker's topic, stream or subject.
	Destination json.RawMessage
	stops       []func()
}

// Close stops the consumer and the broker.
func (b *Broker) Close() {
	for _, stop := range slices.Backward(b.stops) {
		stop()
	}
	b.stops = nil
}

// Start runs the broker cfg names with its consumer, until Close (ctx
// bounds the setup and ends the consumer).
func Start(ctx context.Context, cfg *Config) (*Broker, error) {
	if cfg.Name == "" || cfg.OnMessageFunc == nil {
		return nil, errors.New("devbroker: Name and OnMessageFunc are required")
	}
	b := &Broker{}
	var err error
	switch cfg.Type {
	case Kafka:
		err = b.startKafka(ctx, cfg)
	case NATS:
		err = b.startNATS(ctx, cfg)
	case PubSub:
		err = b.startPubSub(ctx, cfg)
	default:
		err = fmt.Errorf("devbroker: unknown type %q (one of %v)", cfg.Type, Types())
	}
	if err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// consume runs loop in a goroutine until Close (or ctx ends).
func (b *Broker) consume(ctx context.Context, loop func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { loop(ctx) })
	b.stops = append(b.stops, func() {
		cancel()
		wg.Wait()
	})
}

// listenAddr splits addr (empty: a free port on 127.0.0.1).
func listenAddr(addr string) (host string, port int, err error) {
	if addr == "" {
		return "127.0.0.1", 0, nil
	}
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("devbroker: address %q: %w", addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 65535 {
		return "", 0, fmt.Errorf("devbroker: address %q: invalid port", addr)
	}
	return h, n, nil
}

// startKafka runs a one-broker kfake cluster with the topic (three
// partitions) and a consumer of it.
func (b *Broker) startKafka(ctx context.Context, cfg *Config) error {
	// kfake listens on 127.0.0.1 whatever the host.
	_, port, err := listenAddr(cfg.Addr)
	if err != nil {
		return err
	}
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(3, cfg.Name)}
	if port != 0 {
		opts = append(opts, kfake.Ports(port))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return fmt.Errorf("start kfake: %w", err)
	}
	b.stops = append(b.stops, c.Close)
	b.Addr = c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumeTopics(cfg.Name), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return fmt.Errorf("kafka consumer: %w", err)
	}
	b.stops = append(b.stops, cl.Close)
	b.consume(ctx, func(ctx context.Context) {
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				h := make(map[string]string, len(r.Headers))
				for _, kv := range r.Headers {
					h[kv.Key] = string(kv.Value)
				}
				cfg.OnMessageFunc(&Message{Type: Kafka, Key: string(r.Key), Headers: h, Body: r.Value})
			})
		}
	})
	b.Destination = mustJSON(map[string]any{"type": Kafka, "brokers": []string{b.Addr}, "topic": cfg.Name})
	return nil
}

// startNATS runs nats-server with JetStream (file storage in a temporary
// directory), a stream of the subject and everything below it, and a core
// subscriber of the same subjects.
func (b *Broker) startNATS(ctx context.Context, cfg *Config) error {
	host, port, err := listenAddr(cfg.Addr)
	if err != nil {
		return err
	}
	if port == 0 {
		port = natsserver.RANDOM_PORT
	}
	dir, err := os.MkdirTemp("", "hooklane-devbroker-nats-")
	if err != nil {
		return fmt.Errorf("nats store dir: %w", err)
	}
	b.stops = append(b.stops, func() { _ = os.RemoveAll(dir) })
	s, err := natsserver.NewServer(&natsserver.Options{
		Host: host, Port: port, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true,
	})
	if err != nil {
		return fmt.Errorf("start nats-server: %w", err)
	}
	go s.Start()
	b.stops = append(b.stops, func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	if !s.ReadyForConnections(10 * time.Second) {
		return errors.New("start nats-server: not ready within 10s")
	}
	b.Addr = s.Addr().String()
	nc, err := natsgo.Connect(s.ClientURL(), natsgo.Timeout(5*time.Second))
	if err != nil {
		return fmt.Errorf("connect nats: %w", err)
	}
	b.stops = append(b.stops, nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	subjects := []string{cfg.Name, cfg.Name + ".>"}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "DEVBROKER", Subjects: subjects, Storage: jetstream.FileStorage}); err != nil {
		return fmt.Errorf("create stream: %w", err)
	}
	for _, subject := range subjects {
		sub, err := nc.Subscribe(subject, func(m *natsgo.Msg) {
			h := make(map[string]string, len(m.Header))
			for k := range m.Header {
				h[k] = m.Header.Get(k)
			}
			cfg.OnMessageFunc(&Message{Type: NATS, Headers: h, Body: m.Data})
		})
		if err != nil {
			return fmt.Errorf("subscribe: %w", err)
		}
		if err := sub.SetPendingLimits(-1, -1); err != nil {
			return fmt.Errorf("subscribe: %w", err)
		}
	}
	if err := nc.Flush(); err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	b.Destination = mustJSON(map[string]any{"type": NATS, "url": s.ClientURL(), "subject": cfg.Name})
	return nil
}

// startPubSub runs pstest with the topic and a subscription of it (message
// ordering on), and a receiver that acks every message.
func (b *Broker) startPubSub(ctx context.Context, cfg *Config) error {
	addr := cfg.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	srv := pstest.NewServerWithAddress(addr)
	b.stops = append(b.stops, func() { _ = srv.Close() })
	b.Addr = srv.Addr
	c, err := gpubsub.NewClient(ctx, PubSubProject, option.WithEndpoint(srv.Addr), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		return fmt.Errorf("pubsub client: %w", err)
	}
	b.stops = append(b.stops, func() { _ = c.Close() })
	topicName := "projects/" + PubSubProject + "/topics/" + cfg.Name
	if _, err := c.TopicAdminClient.CreateTopic(ctx, &pb.Topic{Name: topicName}); err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	subName := "projects/" + PubSubProject + "/subscriptions/" + cfg.Name
	if _, err := c.SubscriptionAdminClient.CreateSubscription(ctx, &pb.Subscription{
		Name: subName, Topic: topicName, AckDeadlineSeconds: 60, EnableMessageOrdering: true,
	}); err != nil {
		return fmt.Errorf("create subscription: %w", err)
	}
	sub := c.Subscriber(subName)
	sub.ReceiveSettings.NumGoroutines = pubsubStreams
	b.consume(ctx, func(ctx context.Context) {
		_ = sub.Receive(ctx, func(_ context.Context, m *gpubsub.Message) {
			m.Ack()
			cfg.OnMessageFunc(&Message{Type: PubSub, Key: m.OrderingKey, Headers: m.Attributes, Body: m.Data})
		})
	})
	b.Destination = mustJSON(map[string]any{"type": PubSub, "project": PubSubProject, "topic": cfg.Name, "endpoint": srv.Addr})
	return nil
}

// mustJSON encodes v, a map of strings and string slices.
func mustJSON(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("devbroker: encode destination: %v", err))
	}
	return raw
}
