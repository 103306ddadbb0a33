package subscription

import (
	"github.com/hooklane/hooklane/event/cloudevent"
)

// Acceptor decides whether events match one subscription by the rules
// ingest matches with (bindings, specVersion, filters and whatever else the
// Index's per-subscription path checks), whatever the subscription's status:
// a replay (API.md §13) backfills a PAUSED subscription too. Build it once
// with NewAcceptor and reuse it for many events; it is immutable and safe
// for concurrent use.
type Acceptor struct {
	ix *Index
}

// NewAcceptor compiles sub for Accepts. The subscription is copied: later
// changes to sub do not affect the Acceptor.
func NewAcceptor(sub *Subscription) *Acceptor {
	cp := *sub
	// Status decides whether ingest offers events to the subscription at
	// all; the match itself (bindings, filters) is what a replay asks
	// about, so the copy is indexed as ACTIVE.
	cp.Status = StatusActive
	return &Acceptor{ix: NewIndex([]*Subscription{&cp})}
}

// Accepts reports whether ev, whose resolved schema version is version ("" when
// its type has none), matches the subscription. A subscription whose
// bindings or filters do not compile accepts nothing.
func (a *Acceptor) Accepts(ev *cloudevent.Event, version string) bool {
	return len(a.ix.Match(ev, version)) == 1
}

// Accepts reports whether ev matches sub by ingest's rules, whatever sub's
// status (see Acceptor). To test many events against one subscription,
// build an Acceptor once instead.
func Accepts(sub *Subscription, ev *cloudevent.Event, version string) bool {
	return NewAcceptor(sub).Accepts(ev, version)
}
