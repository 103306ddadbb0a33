package webhook

import (
	"context"
	"encoding/hex"
	"net/http"

	"go.opentelemetry.io/otel/trace"

	"github.com/hooklane/hooklane/event/cloudevent"
)

// setTraceParent sets the traceparent header to the span in ctx, the
// router's attempt span while tracing is on (API.md §6), replacing the
// event's own: the receiver's span then continues the delivery's. The
// tracestate header stays the event's, unchanged. With tracing off ctx
// holds no span and h is left as it is.
func setTraceParent(ctx context.Context, h http.Header) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return
	}
	// Version 00: version-traceid-parentid-flags, lower-case hex.
	const size = 2 + 1 + 32 + 1 + 16 + 1 + 2
	tid, sid := sc.TraceID(), sc.SpanID()
	b := make([]byte, 0, size)
	b = append(b, "00-"...)
	b = hex.AppendEncode(b, tid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, sid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, []byte{byte(sc.TraceFlags())})
	h.Set(cloudevent.ExtTraceParent, string(b))
}
