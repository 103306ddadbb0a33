package dispatch

import (
	"sync"
	"time"
)

// CleanCircuitTTLDefault is how long a lifecycle trusts its last read of a
// clean CLOSED circuit (see CircuitPolicy.CleanTTL).
const CleanCircuitTTLDefault = time.Second

// cleanCircuitsMax bounds the subscriptions whose clean circuit one
// lifecycle remembers; past it, expired entries are dropped, and when none
// has expired nothing new is remembered.
const cleanCircuitsMax = 50_000

// cleanCircuits remembers which subscriptions' circuits this lifecycle saw
// clean (CLOSED, no failure counted) and when. While an entry is fresh,
// the gate before a claim and the count of a success need no read of the
// circuit: on a healthy endpoint — nearly every delivery — the circuit
// costs no store round trip. A failure this lifecycle counts, and every
// circuit write it makes, forgets the entry at once, so on one instance the
// circuit is exact; a circuit opened by another instance holds this one's
// deliveries within the TTL.
type cleanCircuits struct {
	ttl time.Duration
	mu  sync.Mutex
	at  map[string]time.Time
}

func newCleanCircuits(ttl time.Duration) *cleanCircuits {
	return &cleanCircuits{ttl: ttl, at: make(map[string]time.Time)}
}

// fresh reports whether subscriptionID's circuit was seen clean within the
// TTL before now.
func (cc *cleanCircuits) fresh(subscriptionID string, now time.Time) bool {
	if cc == nil {
		return false
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	seen, ok := cc.at[subscriptionID]
	return ok && now.Sub(seen) < cc.ttl && !now.Before(seen)
}

// saw records c as read at now: remembered when clean, forgotten when not.
func (cc *cleanCircuits) saw(c *Circuit, now time.Time) {
	if cc == nil {
		return
	}
	if !c.clean() {
		cc.forget(c.SubscriptionID)
		return
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if _, ok := cc.at[c.SubscriptionID]; !ok && len(cc.at) >= cleanCircuitsMax {
		for id, seen := range cc.at {
			if now.Sub(seen) >= cc.ttl {
				delete(cc.at, id)
			}
		}
		if len(cc.at) >= cleanCircuitsMax {
			return
		}
	}
	cc.at[c.SubscriptionID] = now
}

// forget drops what is remembered of subscriptionID's circuit.
func (cc *cleanCircuits) forget(subscriptionID string) {
	if cc == nil {
		return
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	delete(cc.at, subscriptionID)
}
