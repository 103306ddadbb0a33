package api

import (
	"context"
	"slices"
	"strings"

	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/tenant"
)

// The stream's clients filter (API.md §7, §11). Status events do not carry
// their client, so it is looked up per message — in the connection's own
// goroutine, never in the hub's fan-out — and remembered per connection:
// event.accepted belongs to its event's client, dispatch.* to the client of
// the job's subscription, subscription.* to the subscription's client,
// replay.* to the client of the replay's subscription. Anything else
// belongs to no client and passes only an unfiltered stream. A scoped key's stream always has
// the filter, set to its client (guardScope, and wsSession.subscribe).

// ownerMemoMax bounds a connection's memo of message owners.
const ownerMemoMax = 4096

// streamClients filters one connection's messages by client.
type streamClients struct {
	s       *Server
	clients []string
	// scoped is true for a scoped caller: event.accepted then lists only
	// the client's own subscription codes.
	scoped bool
	memo   map[string]string // subject → owner client ("" for none)
}

// newStreamClients returns the filter of clients (nil when the list is
// empty: no filtering).
func (s *Server) newStreamClients(clients []string, scoped bool) *streamClients {
	if len(clients) == 0 {
		return nil
	}
	return &streamClients{s: s, clients: clients, scoped: scoped, memo: make(map[string]string)}
}

// allow returns the message as the connection may see it, or false when it
// is not of a listed client. A lookup that fails hides the message.
func (sc *streamClients) allow(ctx context.Context, e *stream.Event) (*stream.Event, bool) {
	if sc == nil || e.Type == stream.TypeGap {
		return e, true
	}
	owner, err := sc.owner(ctx, e)
	if err != nil {
		sc.s.cfg.Logger.WarnContext(ctx, "stream client lookup failed", "status_event_id", e.ID, "error", err)
		return nil, false
	}
	if owner == "" || !slices.Contains(sc.clients, owner) {
		return nil, false
	}
	if sc.scoped && e.Type == stream.TypeEventAccepted {
		c := *e
		c.Data.Subscriptions = sc.ownCodes(ctx, owner, e.Data.Subscriptions)
		return &c, true
	}
	return e, true
}

// owner returns the client a message is about ("" for none).
func (sc *streamClients) owner(ctx context.Context, e *stream.Event) (string, error) {
	var key string
	switch {
	case e.Type == stream.TypeEventAccepted:
		key = "e:" + e.Subject
	case strings.HasPrefix(e.Type, "dispatch."):
		key = "j:" + e.Subject
	case strings.HasPrefix(e.Type, "subscription."):
		key = "s:" + e.Subject
	case strings.HasPrefix(e.Type, "replay."):
		key = "r:" + e.Subject
	default:
		return "", nil
	}
	if o, ok := sc.memo[key]; ok {
		return o, nil
	}
	o, err := sc.lookup(ctx, key[:1], e.Subject)
	if err != nil {
		return "", err
	}
	if len(sc.memo) >= ownerMemoMax {
		clear(sc.memo)
	}
	sc.memo[key] = o
	return o, nil
}

func (sc *streamClients) lookup(ctx context.Context, kind, id string) (string, error) {
	k := map[string]tenant.Kind{"e": tenant.KindEvent, "j": tenant.KindJob, "r": tenant.KindReplay, "s": tenant.KindSubscription}[kind]
	owner, _, err := sc.s.owners.Owner(ctx, k, id)
	return owner, err
}

// ownCodes keeps the codes of codes that name a subscription of client
// (none when the index cannot be read).
func (sc *streamClients) ownCodes(ctx context.Context, client string, codes []string) []string {
	out, err := sc.s.owners.OwnCodes(ctx, client, codes)
	if err != nil {
		return []string{}
	}
	return out
}
