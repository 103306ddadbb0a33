package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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
}

// streamWS serves GET /api/stream/ws: the status stream over WebSocket, for
// clients that change their subscriptions without reconnecting. One hub
// client serves every subscription of the connection.
func (s *Server) streamWS(c *gin.Context) error {
	cfg := s.cfg.Stream.withDefaults()
	if cfg.Hub == nil {
		return newProblem(http.StatusServiceUnavailable, "the status stream is not enabled on this instance")
	}
	// The server's ReadTimeout would cut the connection.
	_ = http.NewResponseController(c.Writer).SetReadDeadline(time.Time{})
	conn, err := websocket.Accept(c.Writer, c.Request, nil)
	if err != nil {
		// Accept answered the client already.
		s.cfg.Logger.InfoContext(c.Request.Context(), "websocket handshake refused", "error", err)
		return nil
	}
	conn.SetReadLimit(wsReadLimit)
	defer conn.CloseNow() //nolint:errcheck // the fallback after the Close below; on that path the connection is already gone
	ws := &wsSession{s: s, cfg: cfg, conn: conn, subs: make(map[string]*wsSubscription)}
	status, reason := ws.run(c.Request.Context())
	_ = conn.Close(status, reason)
	return nil
}

// run serves the connection and returns the close status to send.
func (ws *wsSession) run(parent context.Context) (websocket.StatusCode, string) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	feed := ws.cfg.Hub.Follow(nil)
	defer feed.Close()

	msgs := make(chan wsClientMessage)
	var wg sync.WaitGroup
	wg.Go(func() { ws.read(ctx, cancel, msgs) })
	defer wg.Wait()
	defer cancel()

	ping := time.NewTicker(ws.cfg.PingInterval)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return websocket.StatusGoingAway, "closing"
		case <-ping.C:
			pctx, pcancel := context.WithTimeout(ctx, ws.cfg.WriteTimeout)
			err := ws.conn.Ping(pctx)
			pcancel()
			if err != nil {
				return websocket.StatusGoingAway, "ping unanswered"
			}
		case m := <-msgs:
			if err := ws.handle(ctx, &m); err != nil {
				return websocket.StatusGoingAway, "write failed"
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

// read passes client messages to msgs until the connection ends; a message
// that is not JSON is answered with an error and ignored.
func (ws *wsSession) read(ctx context.Context, cancel func(), msgs chan<- wsClientMessage) {
	defer cancel()
	for {
		_, data, err := ws.conn.Read(ctx)
		if err != nil {
			return
		}
		var m wsClientMessage
		if err := json.Unmarshal(data, &m); err != nil {
			m = wsClientMessage{Action: "invalid"}
		}
		select {
		case msgs <- m:
		case <-ctx.Done():
			return
		}
	}
}

// handle acts on one client message; only a failed write is an error.
func (ws *wsSession) handle(ctx context.Context, m *wsClientMessage) error {
	if m.SubscriptionID == "" {
		return ws.send(ctx, &wsServerMessage{Error: "subscriptionId is required, and action must be subscribe or unsubscribe"})
	}
	switch m.Action {
	case "unsubscribe":
		delete(ws.subs, m.SubscriptionID)
		return ws.send(ctx, &wsServerMessage{SubscriptionID: m.SubscriptionID, Status: "unsubscribed"})
	case "subscribe":
		return ws.subscribe(ctx, m)
	default:
		return ws.send(ctx, &wsServerMessage{SubscriptionID: m.SubscriptionID, Error: "action must be subscribe or unsubscribe"})
	}
}

// subscribe creates or replaces a subscription: acknowledgement, stream.gap
// when due, replay up to the frontier pinned now, then live events above it.
func (ws *wsSession) subscribe(ctx context.Context, m *wsClientMessage) error {
	id := m.SubscriptionID
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
	var sendErr error
	err = stream.Replay(ctx, ws.s.cfg.Store, &stream.ReplayParams{Cursor: cur, UpTo: sub.frontier, Match: f.match},
		func(e *stream.Event) error {
			sendErr = ws.sendEvent(ctx, id, e)
			return sendErr
		})
	if sendErr != nil {
		return sendErr
	}
	if err != nil {
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
	ce, err := maskedStatusEvent(e).CloudEvent()
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
