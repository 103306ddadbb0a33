package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/coder/websocket"

	"github.com/hooklane/hooklane/stream"
)

// wsClientMessage is what a WebSocket client sends.
type wsClientMessage struct {
	// Action is "subscribe" or "unsubscribe".
	Action         string              `json:"action"`
	SubscriptionID string              `json:"subscriptionId"`
	Filters        stream.FilterValues `json:"filters"`
	LastEventID    string              `json:"lastEventId"`
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
	f, cur, err := stream.NewFilter(&m.Filters, m.LastEventID)
	if err != nil {
		return ws.send(ctx, &wsServerMessage{SubscriptionID: id, Error: err.Error()})
	}
	// The connection's hub client predates this frontier, so every event
	// above it is still to come on the feed.
	if scope := clientScope(ctx); scope != "" {
		// A scoped key sees its client's messages only (API.md §11).
		if other, ok := f.ScopeTo(scope); !ok {
			return ws.send(ctx, &wsServerMessage{SubscriptionID: id, Error: "forbidden: a key scoped to client " + scope + " may not read client " + other})
		}
	}
	sub := &wsSubscription{filter: f, frontier: ws.cfg.Hub.Frontier()}
	sub.clients = ws.s.newStreamClients(f.Clients(), clientScope(ctx) != "")
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
	err = stream.Replay(guard, ws.s.cfg.Store, &stream.ReplayParams{Cursor: cur, UpTo: sub.frontier, Match: f.Match},
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
