package api

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/hooklane/hooklane/stream"
)

// sseWriter writes Server-Sent Events to one client, flushing each one and
// bounding each write by the write timeout.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	now     func() time.Time
	buf     bytes.Buffer
	// retry is the "retry:" line still to send: it rides on the first
	// message, because a block of its own reaches some clients (go-sse) as
	// an empty message (API.md §7).
	retry string
	// clients filters messages by client (nil: no filter); ctx is the
	// request's, for its lookups.
	clients *streamClients
	ctx     context.Context //nolint:containedctx // the request's context, for the clients filter of this one request
}

func (sw *sseWriter) flush() error {
	_ = sw.rc.SetWriteDeadline(sw.now().Add(sw.timeout)) // unsupported writers just block
	if _, err := sw.w.Write(sw.buf.Bytes()); err != nil {
		return fmt.Errorf("write stream: %w", err)
	}
	sw.buf.Reset()
	if err := sw.rc.Flush(); err != nil {
		return fmt.Errorf("flush stream: %w", err)
	}
	return nil
}

// event writes one message; withID false leaves the client's last event id
// as it is (stream.gap).
func (sw *sseWriter) event(e *stream.Event, withID bool) error {
	if sw.ctx.Err() != nil {
		// The stream ends (its credential stopped working, or the client
		// left): nothing more is written, not even the rest of a page.
		return fmt.Errorf("stream ended: %w", context.Cause(sw.ctx))
	}
	e, ok := sw.clients.allow(sw.ctx, e)
	if !ok {
		return nil
	}
	data, err := e.Masked().CloudEvent()
	if err != nil {
		return fmt.Errorf("render status event %s: %w", e.ID, err)
	}
	sw.buf.WriteString(sw.retry)
	sw.retry = ""
	if withID {
		sw.buf.WriteString("id: " + e.ID + "\n")
	}
	sw.buf.WriteString("event: " + e.Type + "\ndata: ")
	sw.buf.Write(data)
	sw.buf.WriteString("\n\n")
	return sw.flush()
}
