package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	gpubsub "cloud.google.com/go/pubsub/v2"               //nolint:depguard // the destination phase starts the broker in process and reads back what the gateway published (issue 31)
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"     //nolint:depguard // (see above)
	"cloud.google.com/go/pubsub/v2/pstest"                //nolint:depguard // (see above)
	natsserver "github.com/nats-io/nats-server/v2/server" //nolint:depguard // (see above, pubsub)
	natsgo "github.com/nats-io/nats.go"                   //nolint:depguard // (see above, pubsub)
	"github.com/nats-io/nats.go/jetstream"                //nolint:depguard // (see above, pubsub)
	amqp "github.com/rabbitmq/amqp091-go"                 //nolint:depguard // (see above, pubsub)
	"github.com/twmb/franz-go/pkg/kfake"                  //nolint:depguard // (see above, pubsub)
	"github.com/twmb/franz-go/pkg/kgo"                    //nolint:depguard // (see above, pubsub)
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Destination types the destination phase measures.
const (
	DestinationWebhook  = "webhook"
	DestinationKafka    = "kafka"
	DestinationNATS     = "nats"
	DestinationRabbitMQ = "rabbitmq"
	DestinationSQS      = "sqs"
	DestinationPubSub   = "pubsub"
)

// DestinationTypes lists the destination phase's types.
func DestinationTypes() []string {
	return []string{DestinationWebhook, DestinationKafka, DestinationNATS, DestinationRabbitMQ, DestinationSQS, DestinationPubSub}
}

// benchBroker is the broker of the destination phase: the destination a
// subscription publishes to and a consumer that reports every message's
// body as it arrives.
type benchBroker struct {
	// raw is the subscription's destination.
	raw json.RawMessage
	// inProcess says the broker runs in this process (its CPU is in the
	// phase's cost); sqs and rabbitmq are the local stack's.
	inProcess bool
	stops     []func()
}

func (b *benchBroker) close() {
	for _, stop := range slices.Backward(b.stops) {
		stop()
	}
}

// startBroker starts the broker of typ (in process for kafka, nats and
// pubsub; the local stack's for sqs and rabbitmq) with a topic, stream or
// queue named name, and a consumer that calls arrive with every message's
// body until the broker is closed.
func startBroker(ctx context.Context, cfg *Config, typ, name string, arrive func(body []byte)) (*benchBroker, error) {
	b := &benchBroker{inProcess: true}
	var err error
	switch typ {
	case DestinationKafka:
		err = b.startKafka(ctx, name, arrive)
	case DestinationNATS:
		err = b.startNATS(ctx, name, arrive)
	case DestinationPubSub:
		err = b.startPubSub(ctx, name, arrive)
	case DestinationSQS:
		b.inProcess = false
		err = b.startSQS(ctx, cfg.SQSEndpoint, name, arrive)
	case DestinationRabbitMQ:
		b.inProcess = false
		err = b.startRabbitMQ(ctx, cfg.AMQPURL, name, arrive)
	default:
		err = fmt.Errorf("unknown destination %q (one of %v)", typ, DestinationTypes())
	}
	if err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// consume runs loop in a goroutine until the broker closes (or ctx ends):
// stop cancels its context and waits for it.
func (b *benchBroker) consume(ctx context.Context, loop func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { loop(ctx) })
	b.stops = append(b.stops, func() {
		cancel()
		wg.Wait()
	})
}

// startKafka starts franz-go's in-process cluster (kfake, one broker, the
// topic of three partitions) and a consumer of the topic.
func (b *benchBroker) startKafka(ctx context.Context, topic string, arrive func([]byte)) error {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, topic))
	if err != nil {
		return fmt.Errorf("start kfake: %w", err)
	}
	b.stops = append(b.stops, c.Close)
	seed := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return fmt.Errorf("kafka consumer: %w", err)
	}
	b.stops = append(b.stops, cl.Close)
	b.consume(ctx, func(ctx context.Context) {
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) { arrive(r.Value) })
		}
	})
	b.raw = mustJSON(map[string]any{"type": "kafka", "brokers": []string{seed}, "topic": topic})
	return nil
}

// startNATS starts an in-process nats-server with JetStream (file
// storage in a temp dir), a stream of the subject and a core subscriber
// of the subject.
func (b *benchBroker) startNATS(ctx context.Context, subject string, arrive func([]byte)) error {
	dir, err := os.MkdirTemp("", "hooklane-bench-nats-")
	if err != nil {
		return fmt.Errorf("nats store dir: %w", err)
	}
	b.stops = append(b.stops, func() { _ = os.RemoveAll(dir) })
	s, err := natsserver.NewServer(&natsserver.Options{
		Host: "127.0.0.1", Port: natsserver.RANDOM_PORT, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true,
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
	nc, err := natsgo.Connect(s.ClientURL(), natsgo.Timeout(5*time.Second))
	if err != nil {
		return fmt.Errorf("connect nats: %w", err)
	}
	b.stops = append(b.stops, nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BENCH", Subjects: []string{subject}, Storage: jetstream.FileStorage}); err != nil {
		return fmt.Errorf("create stream: %w", err)
	}
	sub, err := nc.Subscribe(subject, func(m *natsgo.Msg) { arrive(m.Data) })
	if err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	if err := nc.Flush(); err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	b.raw = mustJSON(map[string]any{"type": "nats", "url": s.ClientURL(), "subject": subject})
	return nil
}

// pubsubProject is the destination phase's Pub/Sub project.
const pubsubProject = "hooklane-bench"

// pubsubStreams is how many streaming pulls the phase's consumer opens.
const pubsubStreams = 16

// startPubSub starts Pub/Sub's in-process fake (pstest), a topic and a
// subscription of it, and a receiver that acks every message.
func (b *benchBroker) startPubSub(ctx context.Context, topic string, arrive func([]byte)) error {
	srv := pstest.NewServerWithAddress("127.0.0.1:0")
	b.stops = append(b.stops, func() { _ = srv.Close() })
	c, err := gpubsub.NewClient(ctx, pubsubProject, option.WithEndpoint(srv.Addr), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		return fmt.Errorf("pubsub client: %w", err)
	}
	b.stops = append(b.stops, func() { _ = c.Close() })
	topicName := "projects/" + pubsubProject + "/topics/" + topic
	if _, err := c.TopicAdminClient.CreateTopic(ctx, &pb.Topic{Name: topicName}); err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	subName := "projects/" + pubsubProject + "/subscriptions/" + topic
	if _, err := c.SubscriptionAdminClient.CreateSubscription(ctx, &pb.Subscription{Name: subName, Topic: topicName, AckDeadlineSeconds: 60}); err != nil {
		return fmt.Errorf("create subscription: %w", err)
	}
	// pstest hands each streaming pull one message per 10 ms tick: with
	// the client's one stream the consumer, not the gateway, was the
	// bottleneck (≈ 80 messages/s). Sixteen streams read ≈ 1,600/s.
	sub := c.Subscriber(subName)
	sub.ReceiveSettings.NumGoroutines = pubsubStreams
	b.consume(ctx, func(ctx context.Context) {
		_ = sub.Receive(ctx, func(_ context.Context, m *gpubsub.Message) {
			m.Ack()
			arrive(m.Data)
		})
	})
	b.raw = mustJSON(map[string]any{"type": "pubsub", "project": pubsubProject, "topic": topic, "endpoint": srv.Addr})
	return nil
}

// startSQS creates a standard queue on the SQS endpoint (the local stack's
// emulator) and a consumer that receives and deletes its messages; the
// queue is deleted at the end. It speaks SQS's JSON protocol unsigned
// (the AWS SDK is destination/sqs's alone, scripts/check-imports.sh): an
// emulator's endpoint only.
func (b *benchBroker) startSQS(ctx context.Context, endpoint, name string, arrive func([]byte)) error {
	if endpoint == "" {
		return errors.New("bench --destination sqs needs an SQS endpoint: --destination-sqs-endpoint or HOOKLANE_TEST_SQS_ENDPOINT (the local stack's: eval \"$(bash localstack/stack.sh env)\")")
	}
	c := &sqsEmulator{endpoint: endpoint, http: &http.Client{Timeout: 30 * time.Second}}
	var created struct {
		QueueURL string `json:"QueueUrl"` //nolint:tagliatelle // SQS's own field name
	}
	if err := c.call(ctx, "CreateQueue", map[string]any{"QueueName": name}, &created); err != nil {
		return err
	}
	url := created.QueueURL
	b.stops = append(b.stops, func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = c.call(dctx, "DeleteQueue", map[string]any{"QueueUrl": url}, nil)
	})
	receive := func(ctx context.Context) {
		for ctx.Err() == nil {
			var out struct {
				Messages []struct {
					Body          string `json:"Body"`          //nolint:tagliatelle // SQS's own field name
					ReceiptHandle string `json:"ReceiptHandle"` //nolint:tagliatelle // SQS's own field name
				} `json:"Messages"` //nolint:tagliatelle // SQS's own field name
			}
			if err := c.call(ctx, "ReceiveMessage", map[string]any{"QueueUrl": url, "MaxNumberOfMessages": 10, "WaitTimeSeconds": 1}, &out); err != nil {
				continue
			}
			var del []map[string]string
			for i, m := range out.Messages {
				arrive([]byte(m.Body))
				del = append(del, map[string]string{"Id": strconv.Itoa(i), "ReceiptHandle": m.ReceiptHandle})
			}
			if len(del) > 0 {
				_ = c.call(ctx, "DeleteMessageBatch", map[string]any{"QueueUrl": url, "Entries": del}, nil)
			}
		}
	}
	// A few receivers: one long poll at a time would trail the gateway.
	for range 4 {
		b.consume(ctx, receive)
	}
	b.raw = mustJSON(map[string]any{
		"type": "sqs", "queueUrl": url, "region": "us-east-1", "endpoint": endpoint, "accessKeyId": "test", "secretAccessKey": "test",
	})
	return nil
}

// sqsEmulator calls an SQS emulator's JSON protocol, unsigned.
type sqsEmulator struct {
	endpoint string
	http     *http.Client
}

// call sends action with in and decodes the answer into out (unless nil).
func (c *sqsEmulator) call(ctx context.Context, action string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("sqs %s: %w", action, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.endpoint, "/")+"/", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("sqs %s: %w", action, err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS."+action)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("sqs %s: %w", action, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("sqs %s: %w", action, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("sqs %s: answered %d: %s", action, resp.StatusCode, raw)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("sqs %s: %w", action, err)
	}
	return nil
}

// startRabbitMQ declares a queue on the broker at url (the local stack's)
// and consumes it; the subscription publishes to the default exchange
// with the queue's name as routing key. The queue goes with the
// connection.
func (b *benchBroker) startRabbitMQ(ctx context.Context, url, queue string, arrive func([]byte)) error {
	if url == "" {
		return errors.New("bench --destination rabbitmq needs a broker: --destination-amqp-url or HOOKLANE_TEST_AMQP_URL (the local stack's: eval \"$(bash localstack/stack.sh env)\")")
	}
	conn, err := amqp.DialConfig(url, amqp.Config{Dial: func(network, addr string) (net.Conn, error) {
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		c, err := (&net.Dialer{}).DialContext(dctx, network, addr)
		if err != nil {
			return nil, fmt.Errorf("dial rabbitmq: %w", err)
		}
		return c, nil
	}})
	if err != nil {
		return fmt.Errorf("connect rabbitmq: %w", err)
	}
	b.stops = append(b.stops, func() { _ = conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("rabbitmq channel: %w", err)
	}
	if _, err := ch.QueueDeclare(queue, false, true, false, false, nil); err != nil {
		return fmt.Errorf("declare queue: %w", err)
	}
	msgs, err := ch.Consume(queue, "", true, false, false, false, nil)
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	b.consume(ctx, func(ctx context.Context) {
		for {
			select {
			case m, ok := <-msgs:
				if !ok {
					return
				}
				arrive(m.Body)
			case <-ctx.Done():
				return
			}
		}
	})
	b.raw = mustJSON(map[string]any{"type": "rabbitmq", "url": url, "exchange": "", "routingKey": queue})
	return nil
}

func mustJSON(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("bench: encode destination: %v", err))
	}
	return raw
}
