// Package destination is the port of the message-broker destinations of
// API.md §15: a subscription delivers to an HTTP target or to a
// destination, a typed value such as
//
//	{"type": "kafka", "brokers": ["kafka-1:9092"], "topic": "orders"}
//
// # Types
//
// Each broker is a [Type], implemented in its own package
// (destination/sqs, destination/kafka, destination/rabbitmq,
// destination/nats, destination/pubsub) and registered once, in wiring:
//
//	reg := destination.NewRegistry(sqs.Type{}, kafka.Type{}, rabbitmq.Type{}, nats.Type{}, pubsub.Type{})
//
// A Type tells everything about its destinations: how to decode and
// validate them ([Type.Decode], problems at JSON pointers), which of their
// fields are write-only secrets ([Type.Secrets]: masked as "***" in
// answers, kept on a PATCH that sends "***" back unless the broker's
// address changed, §14), how a message travels ([Type.Binding]: the
// CloudEvents protocol binding of the broker), and how to publish
// ([Type.Open]). Its decoded [Config] gives the broker addresses that pass
// the gateway's target checks and the masked targetUrl. Nothing outside
// the type's package knows any of it: the registry does the rest
// generically.
//
// # Messages
//
// [NewMessage] builds the one broker-neutral [Message] of a delivery
// attempt from the stored CloudEvent, the subscription's dataOnly and
// headers, the job id, the attempt number and the traceparent, following
// the type's [Binding]: structured content mode by default
// (application/cloudevents+json), binary content mode with dataOnly, and
// the delivery metadata of §15.
//
// # Publishing
//
// [Clients] keeps one [Publisher] per distinct destination configuration
// (secrets included), shared by concurrent deliveries and closed when idle
// or when the bound on their number pushes it out. A failed publish is a
// *[PublishError]: retryable unless the type marked it [Permanent], and
// its text never holds a secret of the destination.
//
// The package imports the standard library only, so that subscription,
// router and api can import it without an adapter.
package destination
