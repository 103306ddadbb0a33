package subscription

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
)

// Index matches events against a fixed set of subscriptions. Exact binding
// codes sit in a map and patterns in a segment trie, so an event reaches
// only the subscriptions bound to its type; their filters alone are then
// evaluated. The cost of Match grows with the number of candidates and the
// code's length, not with the number of subscriptions.
//
// An Index is immutable once built and safe for concurrent use. The
// subscriptions it returns are the ones it was built from, shared: callers
// must not modify them.
//
// The index is partitioned by client (API.md §11): the anchor-level
// subscriptions (no clientId) form one partition, each client's another. An
// event of client C looks only in the anchor partition and C's, an event
// with no client only in the anchor partition, so the cost of Match does not
// grow with the number of clients either.
type Index struct {
	subs []*compiledSub // in match order
	byID map[string]*compiledSub
	// parts holds the partitions by client id; "" is the anchor level.
	parts map[string]*partition
	errs  []error
}

// partition is the binding index of one client's subscriptions (or of the
// anchor-level ones).
type partition struct {
	exact map[string][]ref // each list in match order
	roots map[byte]*trieNode
}

func newPartition() *partition {
	return &partition{exact: make(map[string][]ref), roots: make(map[byte]*trieNode, 2)}
}

// ClientExtension is the CloudEvents extension that names the client an
// event belongs to (API.md §11).
const ClientExtension = "clientid"

// EventClient returns the client ev belongs to ("" for none).
func EventClient(ev *cloudevent.Event) string { return ev.Ext(ClientExtension) }

// partitionKey is the partition of a subscription.
func partitionKey(s *Subscription) string {
	if s.ClientID == nil {
		return ""
	}
	return *s.ClientID
}

// compiledSub is a subscription with its filters compiled.
type compiledSub struct {
	sub      *Subscription
	rank     int
	filters  []compiledFilter
	matching bool // ACTIVE and every filter and binding compiled
}

// ref is one binding of a subscription; version is its specVersion ("" for
// any version).
type ref struct {
	cs      *compiledSub
	version string
}

// trieNode is one level of the pattern trie: children by literal segment,
// star for a one-segment `*`.
type trieNode struct {
	children map[string]*trieNode
	star     *trieNode
	// here holds patterns that end at this node.
	here []ref
	// rest holds patterns whose final `*` follows this node: they match any
	// code with at least one more segment.
	rest []ref
}

// NewIndex builds an index of subs (nil entries are skipped). Subscriptions
// are ordered by Sequence, then Code, then ID. A subscription whose
// filters or bindings do not compile (it was stored without validation)
// never matches; [Index.Errors] lists why.
func NewIndex(subs []*Subscription) *Index {
	ix := &Index{
		byID:  make(map[string]*compiledSub, len(subs)),
		parts: map[string]*partition{"": newPartition()},
	}
	sorted := make([]*Subscription, 0, len(subs))
	for _, s := range subs {
		if s != nil {
			sorted = append(sorted, s)
		}
	}
	slices.SortStableFunc(sorted, compareSubs)
	ix.subs = make([]*compiledSub, len(sorted))
	for i, s := range sorted {
		cs := &compiledSub{sub: s, rank: i, matching: s.Status == StatusActive}
		cs.filters = make([]compiledFilter, 0, len(s.Filters))
		for j, f := range s.Filters {
			cf, err := compileFilter(f)
			if err != nil {
				ix.errs = append(ix.errs, fmt.Errorf("compile subscription %s filter %d: %w", s.ID, j, err))
				cs.matching = false
				continue
			}
			cs.filters = append(cs.filters, cf)
		}
		ix.subs[i] = cs
		ix.byID[s.ID] = cs
		part := ix.parts[partitionKey(s)]
		if part == nil {
			part = newPartition()
			ix.parts[partitionKey(s)] = part
		}
		for _, b := range s.EventTypes {
			if err := part.add(ref{cs: cs, version: b.SpecVersion}, b.EventTypeCode); err != nil {
				ix.errs = append(ix.errs, fmt.Errorf("index subscription %s binding %q: %w", s.ID, b.EventTypeCode, err))
				cs.matching = false
			}
		}
	}
	return ix
}

// compareSubs orders subscriptions for matching: Sequence, Code, ID.
func compareSubs(a, b *Subscription) int {
	return cmp.Or(cmp.Compare(a.Sequence, b.Sequence), cmp.Compare(a.Code, b.Code), cmp.Compare(a.ID, b.ID))
}

// add indexes one binding. Subscriptions are added in match order, so every
// list stays sorted by rank.
func (p *partition) add(r ref, code string) error {
	if !event.IsTypePattern(code) {
		p.exact[code] = append(p.exact[code], r)
		return nil
	}
	if err := event.ValidateTypePattern(code); err != nil {
		return err
	}
	sep, _ := event.TypeSeparatorOf(code)
	node := p.roots[sep]
	if node == nil {
		node = &trieNode{}
		p.roots[sep] = node
	}
	segs := strings.Split(code, string(sep))
	for i, seg := range segs {
		if seg == event.TypeWildcard && i == len(segs)-1 {
			node.rest = append(node.rest, r)
			return nil
		}
		node = node.child(seg)
	}
	node.here = append(node.here, r)
	return nil
}

func (n *trieNode) child(seg string) *trieNode {
	if seg == event.TypeWildcard {
		if n.star == nil {
			n.star = &trieNode{}
		}
		return n.star
	}
	c := n.children[seg]
	if c == nil {
		if n.children == nil {
			n.children = make(map[string]*trieNode)
		}
		c = &trieNode{}
		n.children[seg] = c
	}
	return c
}

// collector gathers the binding lists that match one code.
type collector struct {
	lists [][]ref
	buf   [4][]ref
}

func (c *collector) add(l []ref) {
	if len(l) > 0 {
		c.lists = append(c.lists, l)
	}
}

// walk visits every trie path that matches segs from depth i.
func (n *trieNode) walk(segs []string, i int, c *collector) {
	if i == len(segs) {
		c.add(n.here)
		return
	}
	c.add(n.rest)
	if next := n.children[segs[i]]; next != nil {
		next.walk(segs, i+1, c)
	}
	if n.star != nil {
		n.star.walk(segs, i+1, c)
	}
}

// collect adds the binding lists of the partition that match code.
func (p *partition) collect(code string, c *collector) {
	c.add(p.exact[code])
	if len(p.roots) > 0 {
		if sep, segs, ok := event.SplitTypeCode(code); ok {
			if root := p.roots[sep]; root != nil {
				root.walk(segs, 0, c)
			}
		}
	}
}

// candidates returns the bindings that match the event type code among the
// anchor-level subscriptions and, when clientID is not "", that client's,
// sorted by rank so that the bindings of one subscription are adjacent. The
// result may share memory with the index: read it only.
func (ix *Index) candidates(clientID, code string) []ref {
	var c collector
	c.lists = c.buf[:0]
	ix.parts[""].collect(code, &c)
	if clientID != "" {
		if p := ix.parts[clientID]; p != nil {
			p.collect(code, &c)
		}
	}
	switch len(c.lists) {
	case 0:
		return nil
	case 1:
		return c.lists[0]
	}
	var n int
	for _, l := range c.lists {
		n += len(l)
	}
	out := make([]ref, 0, n)
	for _, l := range c.lists {
		out = append(out, l...)
	}
	slices.SortStableFunc(out, func(a, b ref) int { return cmp.Compare(a.cs.rank, b.cs.rank) })
	return out
}

// matchingCandidates is candidates without the subscriptions that cannot
// match (paused, or not compiled), in a new slice: the form the cache keeps.
func (ix *Index) matchingCandidates(clientID, code string) []ref {
	all := ix.candidates(clientID, code)
	out := make([]ref, 0, len(all))
	for _, r := range all {
		if r.cs.matching {
			out = append(out, r)
		}
	}
	return out
}

// Match returns the ACTIVE subscriptions that ev matches, in Sequence, Code,
// ID order, each at most once. A subscription matches when it is
// anchor-level or of the event's client (the clientid extension), one of
// its bindings matches ev.Type (and, when the binding names a specVersion,
// resolvedVersion equals it) and all its filters pass, unless ev is an
// operational event about that very subscription (see OperationalSource). resolvedVersion is
// the schema version ingest resolved for the event (API.md §1 step 4); ""
// when the type has no versions.
func (ix *Index) Match(ev *cloudevent.Event, resolvedVersion string) []*Subscription {
	return matchRefs(ix.candidates(EventClient(ev), ev.Type), ev, resolvedVersion)
}

// matchRefs evaluates candidate bindings (sorted by rank) against ev. The
// event's data is decoded at most once, and only if a candidate filters on
// it.
func matchRefs(refs []ref, ev *cloudevent.Event, version string) []*Subscription {
	if len(refs) == 0 {
		return nil
	}
	view := eventView{ev: ev}
	var out []*Subscription
	for i := 0; i < len(refs); {
		cs := refs[i].cs
		versionOK := false
		for ; i < len(refs) && refs[i].cs == cs; i++ {
			if v := refs[i].version; v == "" || v == version {
				versionOK = true
			}
		}
		if versionOK && cs.matching && cs.pass(&view) && !aboutItself(ev, cs.sub) {
			out = append(out, cs.sub)
		}
	}
	return out
}

// pass reports whether the subscription accepts the event beyond its
// bindings: the event is in its client scope (an anchor-level subscription
// takes every event, a client's only that client's events, API.md §11) and
// every filter passes. This is the one per-subscription rule; the
// partitions only spare evaluating it on subscriptions of other clients.
func (cs *compiledSub) pass(v *eventView) bool {
	if c := cs.sub.ClientID; c != nil && *c != EventClient(v.ev) {
		return false
	}
	for i := range cs.filters {
		if !cs.filters[i].eval(v) {
			return false
		}
	}
	return true
}

// BindsEventType reports whether any subscription, ACTIVE or PAUSED, is
// bound to exactly code or to a pattern that matches it. The event-type API
// refuses to delete a bound type.
func (ix *Index) BindsEventType(code string) bool {
	for id := range ix.parts {
		if len(ix.candidates(id, code)) > 0 {
			return true
		}
	}
	return false
}

// ByID returns the indexed subscription with that id.
func (ix *Index) ByID(id string) (*Subscription, bool) {
	cs, ok := ix.byID[id]
	if !ok {
		return nil, false
	}
	return cs.sub, true
}

// Subscriptions returns every indexed subscription in match order (Sequence,
// Code, ID), in a new slice.
func (ix *Index) Subscriptions() []*Subscription {
	out := make([]*Subscription, len(ix.subs))
	for i, cs := range ix.subs {
		out[i] = cs.sub
	}
	return out
}

// Len returns the number of indexed subscriptions.
func (ix *Index) Len() int { return len(ix.subs) }

// Errors returns why some subscriptions can never match: a filter or a
// binding that does not compile. Subscriptions validated by
// [Subscription.Validate] have none.
func (ix *Index) Errors() []error { return slices.Clone(ix.errs) }
