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
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go" //nolint:depguard // the destination phase reads back what the gateway published to the local stack's RabbitMQ (issue 31)

	"github.com/hooklane/hooklane/destination/devbroker"
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
	case DestinationKafka, DestinationNATS, DestinationPubSub:
		err = b.startInProcess(ctx, typ, name, arrive)
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

// startInProcess starts the devbroker of typ (kafka, nats, pubsub) with
// its topic, stream or subscription named name.
func (b *benchBroker) startInProcess(ctx context.Context, typ, name string, arrive func([]byte)) error {
	br, err := devbroker.Start(ctx, &devbroker.Config{
		Type: typ, Name: name, OnMessageFunc: func(m *devbroker.Message) { arrive(m.Body) },
	})
	if err != nil {
		return fmt.Errorf("start %s: %w", typ, err)
	}
	b.stops = append(b.stops, br.Close)
	b.raw = br.Destination
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
