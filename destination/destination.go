package destination

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"time"
)

// Type is one kind of destination: a broker. Its implementation is a
// stateless value (sqs.Type{}), registered once in a [Registry]. Methods
// are safe for concurrent use.
type Type interface {
	// Name is the destination's "type" value ("sqs", "kafka", ...): lower
	// case, unique in a registry.
	Name() string
	// Secrets says where the write-only values are in the type's JSON
	// (API.md §14–15). The registry masks, keeps and redacts them.
	Secrets() []Secret
	// Binding says how a message travels on this broker: the names the
	// CloudEvents protocol binding gives the attributes, the content type
	// and the delivery metadata (§15).
	Binding() Binding
	// Decode parses and validates a destination of this type from its JSON
	// object ("type" included). A broken rule is a *ValidationError whose
	// pointers are relative to the destination ("/brokers/0"); any other
	// error is a bug. Decode does no I/O: the broker addresses are checked
	// by the registry ([Registry.CheckAddresses]).
	Decode(raw []byte) (Config, error)
	// Open returns a publisher for cfg, a Config this type decoded. It may
	// connect at once (and fail when the broker is down) or on the first
	// publish; either way it honours ctx and dials through o.Dial only.
	Open(ctx context.Context, cfg Config, o *OpenOptions) (Publisher, error)
}

// Config is a decoded, valid destination of one type, secrets included.
// It marshals to the type's JSON without "type" (the [Destination] adds
// it), with secrets in clear: that is the stored form, never an answer.
type Config interface {
	json.Marshaler
	// Addresses are the broker addresses the gateway connects to, each at
	// its pointer; they pass the target checks.
	Addresses() []Address
	// Audience says where the secrets are sent: the values a PATCH that
	// keeps a secret with "***" must leave unchanged (queueUrl, endpoint,
	// brokers, the host and port of url).
	Audience() []string
	// TargetURL is where the destination delivers, without secrets: a
	// job's targetUrl (§15), e.g. "kafka://broker-1:9092/orders".
	TargetURL() string
}

// Secret locates a write-only value in a type's JSON.
type Secret struct {
	// Pointer is the JSON pointer of the value, relative to the
	// destination ("/sasl/password"). Its value is a string.
	Pointer string
	// InURL says the value is a URL and the secret is the password of its
	// user information ("amqp://user:secret@host/vhost").
	InURL bool
}

// Address is a broker address the gateway connects to.
type Address struct {
	// Pointer is the JSON pointer of the field that holds it, relative to
	// the destination ("/brokers/0").
	Pointer string
	// Host is the host name or IP address, without port or brackets.
	Host string
	// Port is the port, "" when the field had none and the library's
	// default applies.
	Port string
}

// Binding is how a message travels on a broker, after the CloudEvents
// protocol binding of that broker (§15). [NewMessage] reads it.
type Binding struct {
	// Binary says the broker carries binary content mode (dataOnly). An
	// SQS destination is structured only.
	Binary bool
	// AttrPrefix is put before a CloudEvents attribute's name to name its
	// header in binary mode: "ce_" (Kafka), "cloudEvents:" (AMQP), "ce-"
	// (NATS, Pub/Sub).
	AttrPrefix string
	// ContentTypeHeader is the header that carries the content type;
	// empty where the broker has a property of its own (AMQP
	// content_type, set by the publisher from Message.ContentType) or none
	// (SQS).
	ContentTypeHeader string
	// JobIDHeader is the header that carries the job id:
	// "hooklane-job-id", or "Nats-Msg-Id" on NATS; empty where it is a
	// property (AMQP message_id, set by the publisher from Message.JobID).
	JobIDHeader string
	// MaxHeaders bounds the subscription's headers (SQS: 8, beside its
	// two metadata attributes); 0 is no bound.
	MaxHeaders int
	// HeaderNameFunc, when set, reports why the broker cannot carry a
	// subscription header of that name.
	HeaderNameFunc func(name string) error
}

// Publisher publishes the messages of one destination configuration. It
// is shared by concurrent deliveries: every method is safe for
// concurrent use.
type Publisher interface {
	// Publish sends m and waits for the broker's acknowledgement (§15's
	// "success is" column). It returns the broker's answer for the
	// attempt's record ("partition 2 offset 17", a message id). Cancelling
	// ctx abandons the wait: the message may or may not have been
	// accepted (delivery is at-least-once). An error the retry cannot fix
	// is marked with [Permanent]; any other is retryable.
	Publish(ctx context.Context, m *Message) (string, error)
	// Alive reports whether the publisher can still publish; one that
	// lost its connection for good says false, and [Clients] opens a new
	// one.
	Alive() bool
	// Close releases the connection. Publish calls that are running may
	// fail.
	Close() error
}

// DialFunc opens a network connection, as net.Dialer.DialContext does.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// OpenOptions are what [Type.Open] connects with.
type OpenOptions struct {
	// Dial opens every connection to the broker; the wiring passes the
	// gateway's guarded dialer, which refuses private addresses unless
	// they are allowed (the re-check at connect time of §15). Never nil.
	Dial DialFunc
	// ConnectTimeout bounds one connection attempt (dial, TLS,
	// handshake, authentication). Positive.
	ConnectTimeout time.Duration
	// Logger logs the client's own events (a reconnect); never nil.
	Logger *slog.Logger
}

// Destination is a decoded destination: its type and configuration.
// Build one with [Registry.Decode] or [Registry.Load].
type Destination struct {
	// Type is the destination's type.
	Type Type
	// Config is the decoded configuration.
	Config Config

	stored  []byte   // MarshalJSON's output: the stored form, secrets in clear
	secrets []string // the secret values, for redaction
}

// MarshalJSON returns the stored form: {"type": ..., fields...}, secrets
// in clear. Answers use [Destination.Masked].
func (d *Destination) MarshalJSON() ([]byte, error) {
	return bytes.Clone(d.stored), nil
}

// Masked returns the destination's JSON as answers show it: every secret
// "***" (in a URL, its password only).
func (d *Destination) Masked() json.RawMessage {
	doc, err := decodeDoc(d.stored)
	if err != nil {
		// stored was marshalled by newDestination, so it parses.
		panic(fmt.Sprintf("destination: stored form does not parse: %v", err))
	}
	for _, s := range d.Type.Secrets() {
		v, ok := getPointer(doc, s.Pointer)
		str, isStr := v.(string)
		if !ok || !isStr || str == "" {
			continue
		}
		if s.InURL {
			if masked, ok := urlWithPassword(str, Mask); ok {
				setPointer(doc, s.Pointer, masked)
			}
			continue
		}
		setPointer(doc, s.Pointer, Mask)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		panic(fmt.Sprintf("destination: marshal masked form: %v", err))
	}
	return out
}

// TargetURL is the destination's targetUrl, without secrets (§15).
func (d *Destination) TargetURL() string { return d.Config.TargetURL() }

// Key identifies the configuration, secrets included: two destinations
// share a client exactly when their keys are equal.
func (d *Destination) Key() string { return configKey(d.stored) }

// Mask is what answers show in place of a secret, and what a PATCH sends
// back to keep it.
const Mask = "***"
