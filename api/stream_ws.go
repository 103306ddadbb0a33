package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/stream"
)

// wsReadLimit bounds one client message: a subscribe with its filters.
const wsReadLimit = 64 << 10

// WebSocket close status sent to a client dropped as slow; it resumes each
// subscription with its lastEventId (4000-4999 are for applications).
const wsStatusSlow websocket.StatusCode = 4000

// wsSubscription is one subscription of a connection: its filter and the
// frontier pinned when it was made (it receives live events above it).
type wsSubscription struct {
	filter   *stream.Filter
	frontier string
	// clients filters by client (nil: none).
	clients *streamClients
}

// wsSession is one WebSocket connection.
type wsSession struct {
	s    *Server
	cfg  StreamConfig
	conn *websocket.Conn
	subs map[string]*wsSubscription
	// cred is what the connection authenticated with (nil: authentication
	// off); every subscribe authenticates it again.
	cred *credential
}

// streamWS serves GET /api/stream/ws: the status stream over WebSocket, for
// clients that change their subscriptions without reconnecting. One hub
// client serves every subscription of the connection.
func (s *Server) streamWS(c *gin.Context) error {
	cfg := s.cfg.Stream.withDefaults()
	if cfg.Hub == nil {
		return newProblem(http.StatusServiceUnavailable, "the status stream is not enabled on this instance")
	}
	cr := credentialOf(c)
	release, err := holdStream(&cfg, cr)
	if err != nil {
		return err
	}
	defer release()
	// The server's ReadTimeout would cut the connection.
	_ = http.NewResponseController(c.Writer).SetReadDeadline(time.Time{})
	conn, err := websocket.Accept(c.Writer, c.Request, nil)
	if err != nil {
		// Accept answered the client already.
		s.cfg.Logger.InfoContext(c.Request.Context(), "websocket handshake refused", "error", err)
		return nil
	}
	conn.SetReadLimit(wsReadLimit)
	defer conn.CloseNow() //nolint:errcheck // the fallback after the Close in run; on that path the connection is already gone
	ws := &wsSession{s: s, cfg: cfg, conn: conn, subs: make(map[string]*wsSubscription), cred: cr}
	ws.run(c.Request.Context())
	return nil
}

// run serves the connection and closes it. The reader keeps reading until
// the close handshake is done, so the close status and reason reach the
// client (a cancelled read would drop the connection without them).
func (ws *wsSession) run(parent context.Context) {
	readCtx, stopRead := context.WithCancel(parent)
	defer stopRead()
	// ctx ends when the client leaves (the reader stops) or the server
	// stops; writes are bounded by it.
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	guard, stopGuard := ws.s.guardStream(ctx, ws.cred, ws.cfg.AuthRecheck)
	defer stopGuard()
	feed := ws.cfg.Hub.Follow(nil)
	defer feed.Close()

	msgs := make(chan wsClientMessage)
	loopDone := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer cancel()
		ws.read(readCtx, loopDone, msgs)
	})
	status, reason := ws.loop(ctx, guard, feed, msgs)
	close(loopDone)
	_ = ws.conn.Close(status, reason)
	stopRead()
	wg.Wait()
}

// loop sends events and answers client messages until the connection is
// to end, and returns the close status to send.
// guard is ctx, ended also when the credential stops working.
func (ws *wsSession) loop(ctx, guard context.Context, feed *stream.Feed, msgs <-chan wsClientMessage) (websocket.StatusCode, string) {
	ping := time.NewTicker(ws.cfg.PingInterval)
	defer ping.Stop()
	for {
		select {
		case <-guard.Done():
			return ws.ended(guard)
		case <-ping.C:
			pctx, pcancel := context.WithTimeout(ctx, ws.cfg.WriteTimeout)
			err := ws.conn.Ping(pctx)
			pcancel()
			if err != nil {
				return websocket.StatusGoingAway, "ping unanswered"
			}
		case m := <-msgs:
			if err := ws.handle(ctx, guard, &m); err != nil {
				if _, ok := errors.AsType[*streamRevokedError](err); ok {
					return ws.revoked(ctx, err)
				}
				return websocket.StatusGoingAway, "write failed"
			}
			if guard.Err() != nil {
				return ws.ended(guard)
			}
		case e, ok := <-feed.C:
			if !ok {
				return wsStatusSlow, "too slow: reconnect and resume with lastEventId"
			}
			for id, sub := range ws.subs {
				if e.ID <= sub.frontier || !sub.filter.Match(e) {
					continue
				}
				if err := ws.sendEvent(ctx, id, e); err != nil {
					return websocket.StatusGoingAway, "write failed"
				}
			}
		}
	}
}

// ended is the close status of a connection whose guard ended: a policy
// violation when its credential stopped working, else going away (the
// client left or the server stops).
func (ws *wsSession) ended(guard context.Context) (websocket.StatusCode, string) {
	if rev, ok := revokedCause(guard); ok {
		return ws.revoked(guard, rev)
	}
	return websocket.StatusGoingAway, "closing"
}

// revoked logs the end of a connection whose credential stopped working
// and returns its close status: policy violation, with the reason cut to
// what a close frame holds (123 bytes).
func (ws *wsSession) revoked(ctx context.Context, err error) (websocket.StatusCode, string) {
	reason := err.Error()
	if rev, ok := errors.AsType[*streamRevokedError](err); ok {
		reason = "unauthorized: " + rev.detail
	}
	name := ""
	if ws.cred != nil {
		name = ws.cred.key.Name
	}
	ws.s.cfg.Logger.InfoContext(ctx, "stream ended: credential no longer valid", "key", name, "reason", reason)
	if len(reason) > wsCloseReasonMax {
		reason = reason[:wsCloseReasonMax]
	}
	return websocket.StatusPolicyViolation, strings.ToValidUTF8(reason, "")
}

// wsCloseReasonMax is the longest close reason (RFC 6455 §5.5: a control
// frame's payload is at most 125 bytes, 2 of them the status).
const wsCloseReasonMax = 123

// read passes client messages to msgs until the connection ends; a message
// that is not JSON is answered with an error and ignored.
func (ws *wsSession) read(ctx context.Context, loopDone <-chan struct{}, msgs chan<- wsClientMessage) {
	for {
		_, data, err := ws.conn.Read(ctx)
		if err != nil {
			return
		}
		var m wsClientMessage
		if err := json.Unmarshal(data, &m); err != nil {
			m = wsClientMessage{Action: "invalid"}
		} else if ce, err := memberCase(data, reflect.TypeFor[wsClientMessage]()); err == nil && ce != nil {
			m = wsClientMessage{SubscriptionID: m.SubscriptionID, refused: "unknown member " + ce.pointer +
				": names are case-sensitive (did you mean " + ce.want + "?)"}
		}
		select {
		case msgs <- m:
		case <-loopDone:
			// The connection is closing: keep reading until the close
			// handshake ends the read.
		case <-ctx.Done():
			return
		}
	}
}
