// Package transporttest is the conformance suite every transport passes,
// on a real broker or receiver: the promises of API.md §15 (and §6 for
// the HTTP webhook) read back from what arrived. A destination type's test
// calls [Run] with a [Harness] of the type; another transport (the
// webhook) gives the harness a [Transport] adapter as well.
package transporttest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination"
)

// Harness connects the suite to one destination type and its broker.
// Every function must be safe to call from parallel subtests and must
// register its cleanup with t.
type Harness struct {
	// Type is the destination type under test; nil when NewTransport is
	// set.
	Type destination.Type
	// NewTransport, when set, returns the transport under test, built
	// with cfg's logger and timeouts (the suite reads the logger's lines
	// for secrets); nil drives Type through a destination.Registry and
	// destination.Clients, as the broker transport does.
	NewTransport func(t *testing.T, cfg destination.ClientsConfig) Transport
	// Features says where the broker differs from another.
	Features Features
	// NewTarget creates a destination of its own (a fresh topic, queue,
	// exchange with its queue, subject with its stream) on the shared
	// broker, and a reader of what arrives there.
	NewTarget func(t *testing.T, o TargetOptions) *Target
	// NewOutage creates a destination on a broker that the test stops
	// and starts again at the same address, keeping the destination
	// (its topic, queue, stream) across the restart.
	NewOutage func(t *testing.T) *Outage
	// NewMissing returns a destination on the shared broker whose topic,
	// queue, exchange or stream does not exist.
	NewMissing func(t *testing.T) json.RawMessage
	// NewRefused returns a destination on a broker that checks
	// credentials, carrying a wrong secret, and that secret; nil when the
	// broker has no credentials to refuse (Features.NoCredentials).
	NewRefused func(t *testing.T) (raw json.RawMessage, secret string)
	// AtAddress returns a valid destination whose broker is addr
	// ("127.0.0.1:port"), carrying secret wherever the type has one (so
	// that the suite checks it never shows up in an error).
	AtAddress func(t *testing.T, addr, secret string) json.RawMessage
}

// TargetOptions shape a destination NewTarget creates.
type TargetOptions struct {
	// Ordered asks for a destination that carries the message group: an
	// SQS FIFO queue, a Kafka topic of several partitions, a Pub/Sub
	// subscription with message ordering.
	Ordered bool
}

// Target is a destination of the test's own and what arrives there.
type Target struct {
	// Raw is the destination's JSON.
	Raw json.RawMessage
	// Receive waits for the next message (in the broker's order) and
	// returns it, failing the test after a deadline.
	Receive func(t *testing.T) *Received
}

// Outage is a destination whose broker the test stops and starts.
type Outage struct {
	*Target
	// Stop stops the broker (or cuts every connection to it and refuses
	// new ones); Start brings it back at the same address.
	Stop, Start func(t *testing.T)
}

// Received is a message as the broker delivered it to a consumer.
type Received struct {
	// Body is the message's payload.
	Body []byte
	// Headers are its headers, attributes or application properties,
	// values as strings.
	Headers map[string]string
	// Properties are the broker's own message properties the suite
	// checks, by the names Features uses ("key", "partition",
	// "content_type", "message_id", "orderingKey", "MessageGroupId").
	Properties map[string]string
}

// Features says what §15 promises on this broker, in the broker's own
// terms. A place is "header:<name>" (a header, attribute or application
// property) or "property:<name>" (Received.Properties).
type Features struct {
	// Binary says the broker carries dataOnly (binary content mode);
	// unset, a dataOnly destination must be refused at /dataOnly.
	Binary bool
	// AttrPrefix is the binding's prefix of a CloudEvents attribute in
	// binary mode ("ce_", "cloudEvents:", "ce-").
	AttrPrefix string
	// ContentType is where the content type is; "" where the broker has
	// none (SQS).
	ContentType string
	// JobID is where the job id is.
	JobID string
	// Group is where the message group is on an ordered target; "" where
	// the broker has no group (order per queue or subject).
	Group string
	// Partition, when set, is a place that must be equal for every
	// message of one group (Kafka: the partition).
	Partition string
	// MaxBody is the largest event the broker takes; the large-event test
	// sends one a little under it. 0 means 1 MiB.
	MaxBody int
	// NoCredentials says the broker checks no credentials (the SQS and
	// Pub/Sub emulators): the refused-credentials test is not run.
	NoCredentials bool
	// RefusalPermanent says a target that refuses the credentials or does
	// not exist is a permanent failure (the webhook: a 401, 403 or 404 is a
	// 4xx, which ends the job at once, §6); unset, it is a retryable
	// failed attempt (the brokers, §15).
	RefusalPermanent bool
	// MaskedElsewhere says the transport's destination is not a
	// destination type's value, so its secrets are masked by another
	// layer (the webhook's auth: the subscription, §14): SecretsMasked
	// then checks only that a failed delivery's error and logs never
	// show the secret.
	MaskedElsewhere bool
}

// Transport is the transport under test as the suite drives it.
type Transport interface {
	// Decode reads a destination's JSON (p.Raw, p.DataOnly, p.Stored) as
	// a create or PATCH request would, into the transport's own value (a
	// *destination.Destination for a destination type); a refused one is
	// a *destination.ValidationError.
	Decode(p *destination.DecodeParams) (any, error)
	// Deliver delivers one attempt of env to d and returns the answer
	// (never empty on success); a failure is a *destination.PublishError
	// (Permanent when no retry can fix it, Timeout when it ran out of
	// time).
	Deliver(ctx context.Context, d any, env *destination.Envelope) (string, error)
	// Clients is how many clients (connections to a broker, connection
	// pools) the transport holds: one per destination configuration.
	Clients() int
}

// registryTransport drives a destination type as the broker transport
// does: a registry decodes, Clients publishes.
type registryTransport struct {
	typ     destination.Type
	reg     *destination.Registry
	clients *destination.Clients
}

func (r *registryTransport) Decode(p *destination.DecodeParams) (any, error) {
	d, err := r.reg.Decode(p)
	if err != nil {
		return nil, err
	}
	return d, nil
}

func (r *registryTransport) Deliver(ctx context.Context, d any, env *destination.Envelope) (string, error) {
	m, err := destination.NewMessage(r.typ.Binding(), env)
	if err != nil {
		return "", fmt.Errorf("build message: %w", err)
	}
	dest, ok := d.(*destination.Destination)
	if !ok {
		return "", fmt.Errorf("not a destination: %T", d)
	}
	return r.clients.Publish(ctx, dest, m)
}

func (r *registryTransport) Clients() int { return r.clients.Len() }

// Run runs the suite. Every subtest runs in parallel on destinations of
// its own.
func Run(t *testing.T, h *Harness) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, h *Harness)
		// applies is false for a promise the broker cannot keep (see
		// Features): the test is not registered, rather than skipped.
		applies bool
	}{
		{"Structured", testStructured, true},
		{"DataOnly", testDataOnly, true},
		{"MessageGroup", testMessageGroup, h.Features.Group != ""},
		{"LargeEvent", testLargeEvent, true},
		{"Concurrent", testConcurrent, true},
		{"BrokerDown", testBrokerDown, true},
		{"Missing", testMissing, true},
		{"CredentialsRefused", testCredentialsRefused, !h.Features.NoCredentials},
		{"Timeout", testTimeout, true},
		{"SecretsMasked", testSecretsMasked, true},
	}
	for _, tt := range tests {
		if !tt.applies {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, h)
		})
	}
}

// ReceiveDeadline is how long a harness's Receive waits for a message.
const ReceiveDeadline = 30 * time.Second

// bundle is what a test publishes with.
type bundle struct {
	tr   Transport
	logs *strings.Builder
}

// setup returns a registry of the type and clients whose log lines are
// kept (to check them for secrets).
func setup(t *testing.T, h *Harness, cfg destination.ClientsConfig) *bundle {
	t.Helper()
	b := &bundle{logs: &strings.Builder{}}
	cfg.Logger = slog.New(slog.NewTextHandler(&lockedWriter{w: b.logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.ConnectTimeout = cmpDuration(cfg.ConnectTimeout, 10*time.Second)
	cfg.PublishTimeout = cmpDuration(cfg.PublishTimeout, 20*time.Second)
	if h.NewTransport != nil {
		b.tr = h.NewTransport(t, cfg)
		return b
	}
	clients := destination.NewClients(cfg)
	t.Cleanup(clients.Close)
	b.tr = &registryTransport{typ: h.Type, reg: destination.NewRegistry(h.Type), clients: clients}
	return b
}

// decode decodes raw as a create request would.
func (b *bundle) decode(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	d, err := b.tr.Decode(&destination.DecodeParams{Raw: raw})
	require.NoError(t, err)
	return d
}

// where reads a place ("header:x", "property:y") of a received message.
func where(t *testing.T, r *Received, place string) (string, bool) {
	t.Helper()
	kind, name, ok := strings.Cut(place, ":")
	require.True(t, ok, "a place is header:<name> or property:<name>, not %q", place)
	switch kind {
	case "header":
		v, ok := r.Headers[name]
		return v, ok
	case "property":
		v, ok := r.Properties[name]
		return v, ok
	default:
		require.FailNow(t, "unknown place kind", place)
		return "", false
	}
}

func cmpDuration(a, b time.Duration) time.Duration {
	if a > 0 {
		return a
	}
	return b
}
