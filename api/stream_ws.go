package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// wsClientMessage is what a WebSocket client sends.
type wsClientMessage struct {
	// Action is "subscribe" or "unsubscribe".
	Action         string             `json:"action"`
	SubscriptionID string             `json:"subscriptionId"`
	Filters        streamFilterValues `json:"filters"`
	LastEventID    string             `json:"lastEventId"`
	// refused, when set, is why the message was not taken (a member named
	// in another case: names are case-sensitive, as in every body).
	refused string
}

// wsServerMessage is what the server sends: an event of a subscription, or
// the acknowledgement ("subscribed", "unsubscribed") or refusal (error) of
// a client message.
type wsServerMessage struct {
	SubscriptionID string          `json:"subscriptionId"`
	Event          json.RawMessage `json:"event,omitempty"`
	Status         string          `json:"status,omitempty"`
	Error          string          `json:"error,omitempty"`
}

// wsSubscription is one subscription of a connection: its filter and the
// frontier pinned when it was made (it receives live events above it).
type wsSubscription struct {
	filter   *streamFilter
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
				if e.ID <= sub.frontier || !sub.filter.match(e) {
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

// handle acts on one client message; only a failed write is an error.
func (ws *wsSession) handle(ctx, guard context.Context, m *wsClientMessage) error {
	if m.refused != "" {
		return ws.send(ctx, &wsServerMessage{SubscriptionID: m.SubscriptionID, Error: m.refused})
	}
	if m.SubscriptionID == "" {
		return ws.send(ctx, &wsServerMessage{Error: "subscriptionId is required, and action must be subscribe or unsubscribe"})
	}
	switch m.Action {
	case "unsubscribe":
		delete(ws.subs, m.SubscriptionID)
		return ws.send(ctx, &wsServerMessage{SubscriptionID: m.SubscriptionID, Status: "unsubscribed"})
	case "subscribe":
		return ws.subscribe(ctx, guard, m)
	default:
		return ws.send(ctx, &wsServerMessage{SubscriptionID: m.SubscriptionID, Error: "action must be subscribe or unsubscribe"})
	}
}

// subscribe creates or replaces a subscription: acknowledgement, stream.gap
// when due, replay up to the frontier pinned now, then live events above it.
// It authenticates the connection's credential again first: a credential
// that stopped working gets an error message and a *streamRevokedError (the
// connection is then closed); one that cannot be checked now (the store
// failed) gets an error message, and nothing is subscribed.
func (ws *wsSession) subscribe(ctx, guard context.Context, m *wsClientMessage) error {
	id := m.SubscriptionID
	if err := ws.s.reauthenticate(ctx, ws.cred); err != nil {
		if rev, ok := errors.AsType[*streamRevokedError](err); ok {
			if sendErr := ws.send(ctx, &wsServerMessage{SubscriptionID: id, Error: "unauthorized: " + rev.detail}); sendErr != nil {
				return sendErr
			}
			return rev
		}
		ws.s.cfg.Logger.WarnContext(ctx, "websocket subscribe: credential check failed", "subscription_id", id, "error", err)
		return ws.send(ctx, &wsServerMessage{SubscriptionID: id, Error: "the credential could not be checked now; subscribe again"})
	}
	if _, replaces := ws.subs[id]; !replaces && len(ws.subs) >= ws.cfg.MaxSubscriptions {
		return ws.send(ctx, &wsServerMessage{SubscriptionID: id, Error: fmt.Sprintf(
			"too many subscriptions: this connection holds %d, the most allowed (HOOKLANE_MAX_STREAM_SUBSCRIPTIONS); unsubscribe one first",
			len(ws.subs))})
	}
	f, cur, err := m.Filters.parse()
	if err == nil {
		cur.AfterID, err = lastEventID(m.LastEventID)
	}
	if err == nil && cur.AfterID != "" {
		f.since = time.Time{}
	}
	if err != nil {
		msg := err.Error()
		if p, ok := errors.AsType[*Problem](err); ok {
			msg = p.Detail
		}
		return ws.send(ctx, &wsServerMessage{SubscriptionID: id, Error: msg})
	}
	// The connection's hub client predates this frontier, so every event
	// above it is still to come on the feed.
	if scope := clientScope(ctx); scope != "" {
		// A scoped key sees its client's messages only (API.md §11).
		for _, c := range f.clients {
			if c != scope {
				return ws.send(ctx, &wsServerMessage{SubscriptionID: id, Error: "forbidden: a key scoped to client " + scope + " may not read client " + c})
			}
		}
		f.clients = []string{scope}
	}
	sub := &wsSubscription{filter: f, frontier: ws.cfg.Hub.Frontier()}
	sub.clients = ws.s.newStreamClients(f.clients, clientScope(ctx) != "")
	ws.subs[id] = sub
	if err := ws.send(ctx, &wsServerMessage{SubscriptionID: id, Status: "subscribed"}); err != nil {
		return err
	}
	if gap, ok := cur.Gap(ws.s.cfg.NowFunc(), ws.cfg.Retention); ok {
		if err := ws.sendEvent(ctx, id, &gap); err != nil {
			return err
		}
	}
	// The replay reads under the guard (it stops when the credential stops
	// working) a page at a time, writing each page out before it reads the
	// next (stream.ReplayBatchDefault events held); writes are bounded by
	// ctx, so a revocation still closes the connection cleanly.
	var sendErr error
	err = stream.Replay(guard, ws.s.cfg.Store, &stream.ReplayParams{Cursor: cur, UpTo: sub.frontier, Match: f.match},
		func(e *stream.Event) error {
			if guard.Err() != nil {
				return fmt.Errorf("replay of %s ended: %w", id, context.Cause(guard))
			}
			sendErr = ws.sendEvent(ctx, id, e)
			return sendErr
		})
	if sendErr != nil {
		return sendErr
	}
	// A replay the guard ended: the loop closes the connection.
	if err != nil && guard.Err() == nil {
		delete(ws.subs, id)
		ws.s.cfg.Logger.WarnContext(ctx, "websocket replay failed", "subscription_id", id, "error", err)
		return ws.send(ctx, &wsServerMessage{SubscriptionID: id, Error: "replay failed; subscribe again with lastEventId"})
	}
	return nil
}

func (ws *wsSession) sendEvent(ctx context.Context, id string, e *stream.Event) error {
	if sub := ws.subs[id]; sub != nil {
		var ok bool
		if e, ok = sub.clients.allow(ctx, e); !ok {
			return nil
		}
	}
	ce, err := e.Masked().CloudEvent()
	if err != nil {
		return fmt.Errorf("render status event %s: %w", e.ID, err)
	}
	return ws.send(ctx, &wsServerMessage{SubscriptionID: id, Event: ce})
}

// send writes one message within the write timeout.
func (ws *wsSession) send(ctx context.Context, m *wsServerMessage) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode websocket message: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, ws.cfg.WriteTimeout)
	defer cancel()
	if err := ws.conn.Write(wctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("write websocket message: %w", err)
	}
	return nil
}
