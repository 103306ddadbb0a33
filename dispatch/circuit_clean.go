package dispatch

import (
	"sync"
	"time"
)

// CleanCircuitTTLDefault is how long a lifecycle trusts its last read of a
// clean CLOSED circuit (see CircuitPolicy.CleanTTL).
const CleanCircuitTTLDefault = time.Second

// cleanCircuitsMax bounds the subscriptions whose circuit one lifecycle
// remembers; past it, entries not fresh are dropped, and when every entry
// is fresh nothing new is remembered.
const cleanCircuitsMax = 50_000

// cleanCircuits remembers which subscriptions' circuits this lifecycle saw
// clean (CLOSED, no failure counted) and when. While an entry is fresh,
// the gate before a claim and the count of a success need no read of the
// circuit: on a healthy endpoint — nearly every delivery — the circuit
// costs no store round trip. A failure this lifecycle counts, and every
// circuit write it makes, forgets the entry, so on one instance the
// circuit is exact; a circuit opened by another instance holds this one's
// deliveries within the TTL.
//
// A read that began before a forget must not bring the entry back: the
// circuit it read may be the one the forgetting write replaced. Each
// forget takes the next number of a sequence and stays in the entry; a
// reader takes the sequence's number before it reads (begin), and saw
// remembers its clean circuit only when no forget of that subscription
// came after. Writers forget before and after their write, so a read
// either began after the write's second forget (and reads the write) or is
// refused.
type cleanCircuits struct {
	ttl     time.Duration
	mu      sync.Mutex
	seq     uint64 // the last forget's number
	dropped uint64 // the largest forget number of an entry dropped for room
	at      map[string]cleanEntry
}

// cleanEntry is what is remembered of one subscription's circuit.
type cleanEntry struct {
	seen   time.Time // when it was read clean; zero: not clean
	forgot uint64    // the number of its last forget
}

func newCleanCircuits(ttl time.Duration) *cleanCircuits {
	return &cleanCircuits{ttl: ttl, at: make(map[string]cleanEntry)}
}

// begin returns the number a reader passes to saw: it is taken before the
// read.
func (cc *cleanCircuits) begin() uint64 {
	if cc == nil {
		return 0
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.seq
}

// fresh reports whether subscriptionID's circuit was seen clean within the
// TTL before now.
func (cc *cleanCircuits) fresh(subscriptionID string, now time.Time) bool {
	if cc == nil {
		return false
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	e, ok := cc.at[subscriptionID]
	return ok && cc.isFresh(e, now)
}

func (cc *cleanCircuits) isFresh(e cleanEntry, now time.Time) bool {
	return !e.seen.IsZero() && now.Sub(e.seen) < cc.ttl && !now.Before(e.seen)
}

// saw records c, read by a reader that began at since, as read at now:
// remembered when clean and no forget of its subscription came after
// since, forgotten when not clean.
func (cc *cleanCircuits) saw(c *Circuit, now time.Time, since uint64) {
	if cc == nil {
		return
	}
	if !c.clean() {
		cc.forget(c.SubscriptionID)
		return
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	e, ok := cc.at[c.SubscriptionID]
	if (ok && e.forgot > since) || (!ok && cc.dropped > since) {
		return // forgotten while it was read: what was read may be stale
	}
	if !ok && !cc.makeRoom(now) {
		return
	}
	e.seen = now
	cc.at[c.SubscriptionID] = e
}

// forget drops what is remembered of subscriptionID's circuit, and refuses
// what readers that began before it saw.
func (cc *cleanCircuits) forget(subscriptionID string) {
	if cc == nil {
		return
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.seq++
	if _, ok := cc.at[subscriptionID]; !ok && !cc.makeRoom(time.Time{}) {
		cc.dropped = cc.seq // no room to keep the number: refuse every read begun before it
		return
	}
	cc.at[subscriptionID] = cleanEntry{forgot: cc.seq}
}

// makeRoom makes room for one more entry, dropping the entries that are
// not fresh at now (every entry not clean, whatever now) when the map is
// full, and reports whether there is room. Called with mu held.
func (cc *cleanCircuits) makeRoom(now time.Time) bool {
	if len(cc.at) < cleanCircuitsMax {
		return true
	}
	for id, e := range cc.at {
		if e.seen.IsZero() || (!now.IsZero() && !cc.isFresh(e, now)) {
			cc.dropped = max(cc.dropped, e.forgot)
			delete(cc.at, id)
		}
	}
	return len(cc.at) < cleanCircuitsMax
}
