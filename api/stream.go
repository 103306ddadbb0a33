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

	"github.com/hooklane/hooklane/stream"
)

// streamSSE serves GET /api/stream: the replay asked by Last-Event-ID or
// since, then live events, until the client leaves, is too slow (its hub
// channel overflowed or a write timed out), its credential stops working
// (api/stream_auth.go) or the server stops.
func (s *Server) streamSSE(c *gin.Context) error {
	cfg := s.cfg.Stream.withDefaults()
	if cfg.Hub == nil {
		return newProblem(http.StatusServiceUnavailable, "the status stream is not enabled on this instance")
	}
	vals := stream.FilterValues{
		Types: strings.Join(c.QueryArray("types"), ","), Subscriptions: strings.Join(c.QueryArray("subscriptions"), ","),
		EventTypes: strings.Join(c.QueryArray("eventTypes"), ","), Jobs: strings.Join(c.QueryArray("jobs"), ","),
		Clients: strings.Join(c.QueryArray("clients"), ","), Since: c.Query("since"),
	}
	f, cur, err := stream.NewFilter(&vals, c.GetHeader("Last-Event-ID"))
	if err != nil {
		return filterProblem(err)
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

	feed := cfg.Hub.Follow(f.Match)
	defer feed.Close()

	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	c.Writer.WriteHeader(http.StatusOK)
	sw := &sseWriter{
		w: c.Writer, rc: rc, timeout: cfg.WriteTimeout, now: s.cfg.NowFunc,
		retry:   fmt.Sprintf("retry: %d\n", cfg.Retry.Milliseconds()),
		clients: s.newStreamClients(f.Clients(), scopeOf(c) != ""), ctx: ctx,
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
	if err := feed.Replay(ctx, s.cfg.Store, cur, f.Match, func(e *stream.Event) error { return sw.event(e, true) }); err != nil {
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
	if !slices.ContainsFunc(c.QueryArray("include"), func(v string) bool {
		return slices.ContainsFunc(strings.Split(v, ","), func(p string) bool { return strings.TrimSpace(p) == "history" })
	}) {
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
