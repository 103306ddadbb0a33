// Package kafka is the "kafka" destination type (API.md §15): a topic of
// an Apache Kafka cluster, published to with franz-go, every record
// acknowledged by all in-sync replicas (acks=all).
//
//	{"type": "kafka", "brokers": ["kafka-1:9092"], "topic": "orders",
//	 "sasl": {"mechanism": "SCRAM-SHA-256", "username": "hooklane", "password": "…"},
//	 "tls": true}
//
// The job's messageGroup is the record key, so one group goes to one
// partition (the default partitioner hashes the key as Kafka's Java
// client does). A message follows the Kafka protocol binding of
// CloudEvents: structured by default (header content-type:
// application/cloudevents+json), binary with dataOnly (ce_<attr>
// headers); headers hooklane-job-id and hooklane-attempt carry the
// delivery metadata.
//
// A client keeps one connection per broker it talks to (the seeds, then
// the partition leaders), closed by franz-go after 30 s unused.
package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/hooklane/hooklane/destination"
)

// Name is the type's "type" value.
const Name = "kafka"

// maxRecordBytes is the largest record batch the client sends: a 1 MiB
// event with its headers fits. The broker's own max.message.bytes (1 MiB
// by default) still applies; a larger record fails for good.
const maxRecordBytes = 2 << 20

// recordDeliveryTimeout bounds how long a record an attempt gave up on
// stays buffered in the client, retried in the background.
const recordDeliveryTimeout = time.Minute

// Type is the kafka destination type.
type Type struct{}

// Name returns "kafka".
func (Type) Name() string { return Name }

// Secrets are the SASL password and the TLS client key.
func (Type) Secrets() []destination.Secret {
	return []destination.Secret{{Pointer: "/sasl/password"}, {Pointer: "/tls/clientKey"}}
}

// Binding is the Kafka protocol binding of CloudEvents.
func (Type) Binding() destination.Binding {
	return destination.Binding{
		Binary:            true,
		AttrPrefix:        "ce_",
		ContentTypeHeader: "content-type",
		JobIDHeader:       destination.HeaderJobID,
	}
}

// Config is a decoded kafka destination.
type Config struct {
	// Brokers are the seed brokers, host:port.
	Brokers []string
	// Topic is the topic records are produced to.
	Topic string
	// SASL authenticates the connections; nil for none.
	SASL *SASL
	// TLS encrypts the connections; nil for plaintext.
	TLS *destination.TLS

	addrs []destination.Address
}

// SASL is the sasl object of a kafka destination.
type SASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	Mechanism string `json:"mechanism"`
	Username  string `json:"username"`
	Password  string `json:"password"`
}

// topicName is Kafka's rule for topic names.
var topicName = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

// Decode validates a kafka destination.
func (Type) Decode(raw []byte) (destination.Config, error) {
	f := destination.NewFields(raw, Name)
	c := &Config{Brokers: f.RequiredStrings("brokers"), Topic: f.RequiredString("topic")}
	for i, b := range c.Brokers {
		if a, ok := f.HostPort("brokers/"+strconv.Itoa(i), b); ok {
			c.addrs = append(c.addrs, a)
		}
	}
	if c.Topic != "" && (!topicName.MatchString(c.Topic) || c.Topic == "." || c.Topic == "..") {
		f.Problemf("topic", "must be a Kafka topic name: 1 to 249 of a-z A-Z 0-9 . _ -")
	}
	if s := f.Object("sasl"); s != nil {
		c.SASL = &SASL{Mechanism: s.RequiredString("mechanism"), Username: s.RequiredString("username"), Password: s.RequiredString("password")}
		if c.SASL.Mechanism != "" && !slices.Contains([]string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}, c.SASL.Mechanism) {
			s.Problemf("mechanism", "must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
		}
		s.Done()
	}
	c.TLS = f.TLS("tls")
	if err := f.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

// MarshalJSON writes the stored form, secrets in clear.
func (c *Config) MarshalJSON() ([]byte, error) {
	out, err := json.Marshal(struct {
		Brokers []string         `json:"brokers"`
		Topic   string           `json:"topic"`
		SASL    *SASL            `json:"sasl,omitempty"`
		TLS     *destination.TLS `json:"tls,omitempty"`
	}{c.Brokers, c.Topic, c.SASL, c.TLS})
	if err != nil {
		return nil, fmt.Errorf("marshal kafka destination: %w", err)
	}
	return out, nil
}

// Addresses are the seed brokers.
func (c *Config) Addresses() []destination.Address { return c.addrs }

// Audience is the seed brokers: a SASL password goes to them.
func (c *Config) Audience() []string { return slices.Clone(c.Brokers) }

// TargetURL is kafka://<first broker>/<topic>.
func (c *Config) TargetURL() string { return "kafka://" + c.Brokers[0] + "/" + c.Topic }

// Open returns a franz-go producer; it connects on the first publish.
func (Type) Open(_ context.Context, cfg destination.Config, o *destination.OpenOptions) (destination.Publisher, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("kafka: open a %T", cfg)
	}
	dial := destination.BoundedDial(o.Dial, o.ConnectTimeout)
	if c.TLS != nil {
		tlsCfg, err := c.TLS.Config("")
		if err != nil {
			return nil, fmt.Errorf("kafka: %w", err)
		}
		dial = destination.TLSDial(dial, tlsCfg)
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.Brokers...),
		kgo.DefaultProduceTopic(c.Topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.Dialer(dial),
		kgo.ProducerLinger(0),
		kgo.ProducerBatchMaxBytes(maxRecordBytes),
		kgo.MaxBufferedRecords(10_000),
		// A missing topic fails the record after a few metadata retries
		// instead of waiting for the topic until the deadline.
		kgo.UnknownTopicRetries(2),
		// A record still unacknowledged after this is failed (an attempt
		// that gave up on it may have let it go on in the background).
		kgo.RecordDeliveryTimeout(recordDeliveryTimeout),
	}
	if s := c.SASL; s != nil {
		switch s.Mechanism {
		case "SCRAM-SHA-256":
			opts = append(opts, kgo.SASL(scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism()))
		case "SCRAM-SHA-512":
			opts = append(opts, kgo.SASL(scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism()))
		default:
			opts = append(opts, kgo.SASL(plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism()))
		}
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka: new client: %w", err)
	}
	return &publisher{cl: cl, topic: c.Topic}, nil
}

// publisher produces to one topic.
type publisher struct {
	cl    *kgo.Client
	topic string
	dead  atomic.Bool
}

// Publish produces m and waits for acks=all.
func (p *publisher) Publish(ctx context.Context, m *destination.Message) (string, error) {
	rec := &kgo.Record{Topic: p.topic, Value: m.Body}
	if m.Key != "" {
		rec.Key = []byte(m.Key)
	}
	for _, k := range slices.Sorted(maps.Keys(m.Headers)) {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: k, Value: []byte(m.Headers[k])})
	}
	// Produce, not ProduceSync: once a record is on its way franz-go does
	// not give it up when ctx ends (it keeps retrying it, idempotently,
	// until recordDeliveryTimeout), and the attempt must not outlive ctx.
	done := make(chan error, 1)
	p.cl.Produce(ctx, rec, func(_ *kgo.Record, err error) { done <- err })
	select {
	case err := <-done:
		if err != nil {
			err = fmt.Errorf("produce to %s: %w", p.topic, err)
			if errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) {
				return "", destination.Permanent(err)
			}
			if errors.Is(err, kerr.UnknownTopicID) {
				// The topic was deleted and created again (a new id):
				// the client keeps asking for the old one, so the next
				// attempt gets a new client.
				p.dead.Store(true)
			}
			return "", err
		}
		return fmt.Sprintf("partition %d offset %d", rec.Partition, rec.Offset), nil
	case <-ctx.Done():
		return "", fmt.Errorf("produce to %s: no acknowledgement: %w", p.topic, ctx.Err())
	}
}

// Alive is true until the topic's id changed under the client; franz-go
// reconnects to the brokers on its own.
func (p *publisher) Alive() bool { return !p.dead.Load() }

// Close closes the client's connections.
func (p *publisher) Close() error {
	p.cl.Close()
	return nil
}
