// Package broker delivers jobs to message-broker destinations (API.md
// §15): the router.Transport registered for every destination type's
// scheme ("kafka", "nats", ...). For each attempt it loads the
// subscription's current destination with the destination.Registry,
// builds the broker-neutral message with destination.NewMessage (the
// stored event in structured or binary content mode, the subscription's
// headers, the job id, the attempt number, the message group and the
// attempt span's traceparent), reshaped by the subscription's
// transformation when it has one that is on (API.md §16, run by
// router/transformrun as for webhooks: its payload the body, its headers
// the custom headers; a cancel publishes nothing and cancels the job; a
// failure, or a url or method set, is a failed attempt not retried and not
// counted toward the circuit), publishes it through the one shared
// destination.Clients, and turns the broker's answer into the outcome: a
// *destination.PublishError is a failed attempt, retryable unless the type
// marked it permanent, with no status code and the broker's answer as its
// error; a success records the broker's answer (an offset, a message id)
// as the attempt's response.
//
// The attempt's CLIENT span, started by the router, is named for the
// broker ("send orders") and carries the messaging semantic conventions.
package broker
