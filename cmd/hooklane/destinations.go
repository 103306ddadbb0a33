package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/hooklane/hooklane/destination"
	"github.com/hooklane/hooklane/destination/kafka"
	"github.com/hooklane/hooklane/destination/nats"
	"github.com/hooklane/hooklane/destination/pubsub"
	"github.com/hooklane/hooklane/destination/rabbitmq"
	"github.com/hooklane/hooklane/destination/sqs"
	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/router/broker"
	"github.com/hooklane/hooklane/router/transformrun"
	"github.com/hooklane/hooklane/router/webhook"
	"github.com/hooklane/hooklane/subscription/transform"
)

// newDestinationRegistry is the one list of the destination types this
// gateway delivers to (API.md §15). Adding a type is one package and one
// entry here.
func newDestinationRegistry() *destination.Registry {
	return destination.NewRegistry(sqs.Type{}, kafka.Type{}, rabbitmq.Type{}, nats.Type{}, pubsub.Type{})
}

// brokerTransport is the router's transport of the destinations with the
// clients it publishes through.
type brokerTransport struct {
	clients   *destination.Clients
	transport *broker.Transport
}

// newBrokerTransport builds the destinations' transport: one
// destination.Clients for the process (one client per destination
// configuration, closed when idle), dialling through the same guarded
// dialer as webhooks (private addresses refused unless
// HOOKLANE_ALLOW_PRIVATE_TARGETS, checked on the resolved address at
// connect time). Subscriptions' transformations run on transformer (API.md
// §16; nil: none run), each run reported to onTransform.
func newBrokerTransport(
	reg *destination.Registry, allowPrivate bool, logger *slog.Logger,
	transformer *transform.Engine, onTransform func(transformrun.Run),
) *brokerTransport {
	clients := destination.NewClients(destination.ClientsConfig{
		Dial:   webhook.NewDialContext(allowPrivate, destination.ConnectTimeoutDefault),
		Logger: logger.With("component", "destination_clients"),
	})
	return &brokerTransport{
		clients: clients,
		transport: broker.New(broker.Config{
			Registry: reg, Clients: clients, Logger: logger, NowFunc: time.Now,
			Transform: transformer, OnTransformFunc: onTransform,
		}),
	}
}

// register adds the transport under every destination type's scheme.
func (b *brokerTransport) register(ts router.Transports) { b.transport.Register(ts) }

// run closes idle clients until ctx ends.
func (b *brokerTransport) run(ctx context.Context) error {
	return b.clients.Run(ctx)
}

// close closes every client, once the router has drained (a publish
// still running closes its client when it returns).
func (b *brokerTransport) close() { b.clients.Close() }
