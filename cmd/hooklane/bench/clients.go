package bench

import (
	"fmt"
	"math"
	"time"

	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/subscription"
)

// ClientMatchClients are the client counts of the matching phase's client
// scale (API.md §11): each client has ClientMatchPerClient subscriptions.
var ClientMatchClients = []int{1, 100, 1000, 10000} //nolint:gochecknoglobals // a constant list; Go has no constant slices

// ClientMatchPerClient is the number of subscriptions of each client in
// the client scale.
const ClientMatchPerClient = 10

// ClientMatchResult is one match of a subscription index holding clients ×
// 10 client subscriptions and 10 anchor-level ones, for an event of one
// client, measured in the benchmark process; the ratio is to the first
// (fewest clients).
type ClientMatchResult struct {
	Clients       int     `json:"clients"`
	Subscriptions int     `json:"subscriptions"`
	MatchMicros   float64 `json:"matchMicros"`
	Ratio         float64 `json:"ratio"`
}

// clientMatching measures the client scale: the index is partitioned by
// client, so the cost stays flat however many clients there are.
func clientMatching() []ClientMatchResult {
	var out []ClientMatchResult
	for _, n := range ClientMatchClients {
		us := clientMatchMicros(n)
		r := ClientMatchResult{Clients: n, Subscriptions: n*ClientMatchPerClient + ClientMatchPerClient, MatchMicros: us, Ratio: 1}
		if len(out) > 0 && out[0].MatchMicros > 0 {
			r.Ratio = us / out[0].MatchMicros
		}
		out = append(out, r)
	}
	return out
}

// clientMatchMicros builds the index of clients × 10 subscriptions (each
// client's bind the event's type once, and other types) plus 10
// anchor-level ones, and returns the best mean time of one match for an
// event of the middle client.
func clientMatchMicros(clients int) float64 {
	subs := make([]*subscription.Subscription, 0, (clients+1)*ClientMatchPerClient)
	add := func(clientID *string, owner string, j int) {
		typ := fmt.Sprintf("bench.other.t%05d", j)
		if j == 0 {
			typ = MatchEventType
		}
		subs = append(subs, &subscription.Subscription{
			ID: fmt.Sprintf("%s-%03d", owner, j), Code: fmt.Sprintf("s%03d", j), ClientID: clientID,
			Status: subscription.StatusActive, EventTypes: []subscription.Binding{{EventTypeCode: typ}},
		})
	}
	for j := range ClientMatchPerClient {
		add(nil, "anchor", j)
	}
	for i := range clients {
		id := fmt.Sprintf("client-%05d", i)
		for j := range ClientMatchPerClient {
			add(&id, id, j)
		}
	}
	ix := subscription.NewIndex(subs)
	ev := &cloudevent.Event{
		SpecVersion: "1.0", ID: "e", Source: "/bench", Type: MatchEventType,
		Extensions: map[string]any{subscription.ClientExtension: fmt.Sprintf("client-%05d", clients/2)},
	}
	const rounds, tries = 5000, 7
	best := time.Duration(math.MaxInt64)
	for range tries {
		start := time.Now()
		for range rounds {
			if len(ix.Match(ev, "")) != 2 { // the anchor-level one and the client's
				return 0
			}
		}
		best = min(best, time.Since(start))
	}
	return float64(best) / rounds / float64(time.Microsecond)
}
