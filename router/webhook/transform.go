package webhook

import (
	"github.com/hooklane/hooklane/router/transformrun"
)

// The transformation of a delivery (API.md §16) runs in router/transformrun,
// shared with the broker transport; these names are the webhook's view of
// it.

// CancelledByTransformation is the reason in the status history of a job
// whose transformation cancelled it (API.md §16).
const CancelledByTransformation = transformrun.CancelledReason

// TransformError is a transformation that failed at delivery (API.md §16):
// a run error (a throw, a timeout, an invalid or too large result), code
// that does not compile, or a url or method the request cannot take. The
// attempt fails, is not retried, and does not count toward the circuit.
type TransformError = transformrun.Error

// TransformRun is one run of a delivery's transformation, as
// Config.OnTransformFunc is told of it.
type TransformRun = transformrun.Run
