// Package transformrun runs a subscription's transformation (API.md §16) on
// one delivery attempt, for every transport: the webhook transport
// (router/webhook) and the broker transport (router/broker) call the one
// [Runner]. It compiles (or takes from its cache) the subscription's code,
// builds the handler's input from the rendered delivery (the payload is the
// structured CloudEvent, or the data alone with dataOnly; the url is the
// target, absent for a destination), runs it on the engine, checks the
// result, and reports every run to a metrics hook and as a "transform"
// span, a child of the attempt's.
//
// A cancelled delivery is [ErrCancelled]; a failed transformation (a throw,
// a timeout, an invalid or too large result, code that no longer compiles)
// is an [*Error], a non-retryable failed attempt that does not count toward
// the circuit; [FailedOutcome] turns either into the attempt's outcome.
package transformrun
