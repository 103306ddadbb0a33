package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/oklog/ulid/v2"

	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
)

// Stream defaults.
const (
	// StreamPingIntervalDefault is the period of the `: ping` comment (API.md
	// promises at least every 15 s).
	StreamPingIntervalDefault = 15 * time.Second
	// StreamRetryDefault is the reconnection delay advertised by `retry:`.
	StreamRetryDefault = 2 * time.Second
	// StreamWriteTimeoutDefault bounds one write to a client: a client that
	// does not read for that long is disconnected.
	StreamWriteTimeoutDefault = 10 * time.Second
	// StreamRetentionDefault is how long status events are kept.
	StreamRetentionDefault = time.Hour
)

// StreamConfig configures GET /api/stream and /api/stream/ws.
type StreamConfig struct {
	// Hub publishes the live events; nil answers 503.
	Hub *stream.Hub
	// PingInterval is the heartbeat period. Default 15 s.
	PingInterval time.Duration
	// Retry is the client reconnection delay advertised. Default 2 s.
	Retry time.Duration
	// WriteTimeout bounds one write to a client. Default 10 s.
	WriteTimeout time.Duration
	// Retention is the status event retention window: a replay starting
	// before it gets a stream.gap event first. Default 1 h.
	Retention time.Duration
	// AuthRecheck is how often an open stream authenticated by a client
	// token or a client-scoped key authenticates again against the store
	// (api/stream_auth.go). Default StreamAuthRecheckDefault.
	AuthRecheck time.Duration
	// MaxPerKey is how many streams one key or token may hold open on this
	// instance; past it a new one answers 429. Default
	// StreamMaxPerKeyDefault. Requests without a key (authentication off)
	// are not counted.
	MaxPerKey int
	// MaxSubscriptions is how many subscriptions one WebSocket connection
	// may hold. Default StreamMaxSubscriptionsDefault.
	MaxSubscriptions int
}

func (sc *StreamConfig) withDefaults() StreamConfig {
	out := *sc
	if out.PingInterval <= 0 {
		out.PingInterval = StreamPingIntervalDefault
	}
	if out.Retry <= 0 {
		out.Retry = StreamRetryDefault
	}
	if out.WriteTimeout <= 0 {
		out.WriteTimeout = StreamWriteTimeoutDefault
	}
	if out.Retention <= 0 {
		out.Retention = StreamRetentionDefault
	}
	if out.AuthRecheck <= 0 {
		out.AuthRecheck = StreamAuthRecheckDefault
	}
	if out.MaxPerKey <= 0 {
		out.MaxPerKey = StreamMaxPerKeyDefault
	}
	if out.MaxSubscriptions <= 0 {
		out.MaxSubscriptions = StreamMaxSubscriptionsDefault
	}
	return out
}

// streamFilter is the server-side filter of API.md §7. Empty lists do not
// filter; the lists of one filter are ANDed, the values of one list ORed.
type streamFilter struct {
	types         []string
	subscriptions []string
	eventTypes    []string
	jobs          []string
	// clients lists client ids (API.md §11); applied per connection by
	// streamClients, not in match (it needs lookups).
	clients []string
	// since drops events older than it, live ones included; zero when a
	// Last-Event-ID is given (it wins).
	since time.Time
}

// streamFilterValues are the raw filter parameters, as query values or the
// WebSocket filters object.
type streamFilterValues struct {
	Types         string `json:"types"`
	Subscriptions string `json:"subscriptions"`
	EventTypes    string `json:"eventTypes"`
	Jobs          string `json:"jobs"`
	Clients       string `json:"clients"`
	Since         string `json:"since"`
}

func splitList(v string) []string {
	var out []string
	for p := range strings.SplitSeq(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parse validates the values into a filter and a cursor (Since only; the
// caller adds the last event id).
func (v *streamFilterValues) parse() (*streamFilter, stream.Cursor, error) {
	f := &streamFilter{
		types: splitList(v.Types), subscriptions: splitList(v.Subscriptions),
		eventTypes: splitList(v.EventTypes), jobs: splitList(v.Jobs), clients: splitList(v.Clients),
	}
	var cur stream.Cursor
	if v.Since != "" {
		t, err := time.Parse(time.RFC3339Nano, v.Since)
		if err != nil {
			return nil, cur, unprocessable("since must be an RFC 3339 timestamp",
				FieldError{Pointer: "", Message: "query parameter since must be an RFC 3339 timestamp"})
		}
		cur.Since, f.since = t, t
	}
	return f, cur, nil
}

// match reports whether an event passes the filter.
func (f *streamFilter) match(e *stream.Event) bool {
	if !f.since.IsZero() && e.Time.Before(f.since) {
		return false
	}
	accepted := e.Type == stream.TypeEventAccepted
	if len(f.types) > 0 && !slices.ContainsFunc(f.types, func(t string) bool {
		if p, ok := strings.CutSuffix(t, "*"); ok {
			return strings.HasPrefix(e.Type, p)
		}
		return t == e.Type
	}) {
		return false
	}
	if len(f.subscriptions) > 0 {
		if accepted {
			if !slices.ContainsFunc(e.Data.Subscriptions, func(s string) bool { return slices.Contains(f.subscriptions, s) }) {
				return false
			}
		} else if !slices.Contains(f.subscriptions, e.Data.Subscription) {
			return false
		}
	}
	if len(f.eventTypes) > 0 && !slices.ContainsFunc(f.eventTypes, func(p string) bool {
		return subscription.MatchPattern(p, e.Data.EventType)
	}) {
		return false
	}
	if len(f.jobs) > 0 && (accepted || !slices.Contains(f.jobs, e.Subject)) {
		return false
	}
	return true
}

// lastEventID reads a resume id; it must be a ULID, the only ids the
// stream sends.
func lastEventID(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	if _, err := ulid.ParseStrict(v); err != nil {
		return "", unprocessable("Last-Event-ID must be an event id (ULID) received from the stream")
	}
	return v, nil
}

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

// streamSSE serves GET /api/stream: the replay asked by Last-Event-ID or
// since, then live events, until the client leaves, is too slow (its hub
// channel overflowed or a write timed out), its credential stops working
// (api/stream_auth.go) or the server stops.
func (s *Server) streamSSE(c *gin.Context) error {
	cfg := s.cfg.Stream.withDefaults()
	if cfg.Hub == nil {
		return newProblem(http.StatusServiceUnavailable, "the status stream is not enabled on this instance")
	}
	vals := streamFilterValues{
		Types: strings.Join(c.QueryArray("types"), ","), Subscriptions: strings.Join(c.QueryArray("subscriptions"), ","),
		EventTypes: strings.Join(c.QueryArray("eventTypes"), ","), Jobs: strings.Join(c.QueryArray("jobs"), ","),
		Clients: strings.Join(c.QueryArray("clients"), ","), Since: c.Query("since"),
	}
	f, cur, err := vals.parse()
	if err != nil {
		return err
	}
	if cur.AfterID, err = lastEventID(c.GetHeader("Last-Event-ID")); err != nil {
		return err
	}
	if cur.AfterID != "" {
		f.since = time.Time{}
	}
	cr := credentialOf(c)
	release, err := holdStream(&cfg, cr)
	if err != nil {
		return err
	}
	defer release()
	ctx, stopGuard := s.guardStream(c.Request.Context(), cr, cfg.AuthRecheck)
	defer stopGuard()
	rc := http.NewResponseController(c.Writer)
	// The server's ReadTimeout would end this long-lived request.
	_ = rc.SetReadDeadline(time.Time{})

	feed := cfg.Hub.Follow(f.match)
	defer feed.Close()

	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	c.Writer.WriteHeader(http.StatusOK)
	sw := &sseWriter{
		w: c.Writer, rc: rc, timeout: cfg.WriteTimeout, now: s.cfg.NowFunc,
		retry:   fmt.Sprintf("retry: %d\n", cfg.Retry.Milliseconds()),
		clients: s.newStreamClients(f.clients, scopeOf(c) != ""), ctx: ctx,
	}
	// A comment opens the stream at once (headers and a first byte through
	// any proxy); clients ignore it.
	sw.buf.WriteString(": connected\n\n")
	if err := sw.flush(); err != nil {
		return nil // the client left; nothing to answer
	}
	if gap, ok := cur.Gap(s.cfg.NowFunc(), cfg.Retention); ok {
		if err := sw.event(&gap, false); err != nil {
			return nil // the client left
		}
	}
	// The replay reads the store a page at a time and writes each page out
	// before it reads the next (stream.ReplayBatchDefault events held).
	if err := feed.Replay(ctx, s.cfg.Store, cur, f.match, func(e *stream.Event) error { return sw.event(e, true) }); err != nil {
		if ctx.Err() == nil {
			s.cfg.Logger.WarnContext(ctx, "stream replay ended", "error", err)
		}
		s.sseRevoked(ctx, sw, c)
		return nil
	}
	ping := time.NewTicker(cfg.PingInterval)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			s.sseRevoked(ctx, sw, c)
			return nil
		case <-ping.C:
			sw.buf.WriteString(": ping\n\n")
			if err := sw.flush(); err != nil {
				return nil // the client left
			}
		case e, ok := <-feed.C:
			if !ok {
				// Dropped as slow (or shutting down): closing the response
				// makes the client reconnect with its Last-Event-ID.
				s.cfg.Logger.InfoContext(ctx, "stream client dropped (too slow, or shutting down)", "remote", c.ClientIP())
				return nil
			}
			if !feed.Live(e) {
				continue
			}
			if err := sw.event(e, true); err != nil {
				return nil // the client left or is too slow
			}
		}
	}
}

// sseRevoked ends a stream whose credential stopped working, when that is
// why ctx ended: a last comment says why (a reconnection then answers 401,
// which ends an EventSource for good).
func (s *Server) sseRevoked(ctx context.Context, sw *sseWriter, c *gin.Context) {
	rev, ok := revokedCause(ctx)
	if !ok {
		return
	}
	s.cfg.Logger.InfoContext(ctx, "stream ended: credential no longer valid",
		"key", c.GetString(ctxKeyName), "reason", rev.detail)
	sw.buf.WriteString(": " + strings.ReplaceAll(rev.Error(), "\n", " ") + "\n\n")
	_ = sw.flush() // the response ends either way
}

// writeWithHistory answers 200 with v, a JSON object, and, with
// ?include=history, its "history": the status events whose subject is
// subject, as CloudEvents in ascending id order.
func (s *Server) writeWithHistory(c *gin.Context, subject string, v any) error {
	if !slices.Contains(splitList(strings.Join(c.QueryArray("include"), ",")), "history") {
		c.JSON(http.StatusOK, v)
		return nil
	}
	events, err := s.cfg.Store.StatusEventListBySubject(c.Request.Context(), subject)
	if err != nil {
		return err
	}
	history := make([]json.RawMessage, 0, len(events))
	for i := range events {
		b, err := events[i].Masked().CloudEvent()
		if err != nil {
			return fmt.Errorf("render status event %s: %w", events[i].ID, err)
		}
		history = append(history, b)
	}
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", subject, err)
	}
	hist, err := json.Marshal(history)
	if err != nil {
		return fmt.Errorf("encode history of %s: %w", subject, err)
	}
	body = bytes.TrimRight(body, " \n")
	if len(body) < 2 || body[len(body)-1] != '}' {
		return fmt.Errorf("add history to %s: not a JSON object", subject)
	}
	out := append([]byte(nil), body[:len(body)-1]...)
	if len(body) > 2 {
		out = append(out, ',')
	}
	out = append(out, `"history":`...)
	out = append(out, hist...)
	out = append(out, '}')
	c.Data(http.StatusOK, "application/json; charset=utf-8", out)
	return nil
}
