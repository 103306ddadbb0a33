package subscription

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/event/cloudevent"
)

// typedSubs returns n subscriptions over types event types, n/types per
// type: per ten, six exact bindings (two with an attribute and a data
// filter), one bound to schema version 1.0, two prefix globs of the type's
// domain and one inner-segment wildcard. Codes look like
// "domain3.entity17.created".
func typedSubs(n, types int) []*Subscription {
	subs := make([]*Subscription, 0, n)
	for i := range n {
		typ := i % types
		domain, entity := typ/50, typ%50
		code := fmt.Sprintf("domain%d.entity%d.created", domain, entity)
		id := "t" + strconv.Itoa(i)
		var s *Subscription
		switch (i / types) % 10 {
		case 0, 1:
			s = testSub(id, i%10, code)
			s.Filters = []Filter{filter("region", "in", `["eu","us-west"]`), filter("data.amount", "gte", `100`)}
		case 2, 3, 4, 5:
			s = testSub(id, i%10, code)
		case 6:
			s = testSub(id, i%10, code)
			s.EventTypes[0].SpecVersion = "1.0"
		case 7, 8:
			s = testSub(id, i%10, fmt.Sprintf("domain%d.entity%d.*", domain, entity))
		default:
			s = testSub(id, i%10, fmt.Sprintf("domain%d.*.created", domain))
		}
		s.ID = fmt.Sprintf("%08d", i)
		subs = append(subs, s)
	}
	return subs
}

// typedEvents returns one event per type, with data that passes the filters.
func typedEvents(types int) []*cloudevent.Event {
	evs := make([]*cloudevent.Event, types)
	for typ := range types {
		evs[typ] = &cloudevent.Event{
			SpecVersion: "1.0", ID: "e" + strconv.Itoa(typ), Source: "/bench",
			Type:       fmt.Sprintf("domain%d.entity%d.created", typ/50, typ%50),
			Extensions: map[string]any{"region": "us-west"},
			Data:       json.RawMessage(`{"amount": 150, "currency": "EUR"}`),
		}
	}
	return evs
}

// BenchmarkIndexMatchTypes matches events of every type in turn against
// 10,000 subscriptions over 1,000 types, next to 1,000 over 100 and 100,000
// over 10,000 (the same ten per type): the cost per event must stay flat
// as the total grows, since candidates come from a map (exact codes) and a
// trie (patterns), never a scan.
func BenchmarkIndexMatchTypes(b *testing.B) {
	for _, tc := range []struct{ subs, types int }{{1_000, 100}, {10_000, 1_000}, {100_000, 10_000}} {
		b.Run(fmt.Sprintf("subs=%d/types=%d", tc.subs, tc.types), func(b *testing.B) {
			ix := NewIndex(typedSubs(tc.subs, tc.types))
			evs := typedEvents(tc.types)
			if got := len(ix.Match(evs[0], "1.0")); got == 0 {
				b.Fatal("no match")
			}
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				_ = ix.Match(evs[i%len(evs)], "1.0")
				i++
			}
		})
	}
}

// BenchmarkCacheMatchTypes is the same through the cache, once every
// type's candidate list is cached.
func BenchmarkCacheMatchTypes(b *testing.B) {
	st := &fakeStore{}
	st.set(typedSubs(10_000, 1_000)...)
	c := NewCache(CacheConfig{Store: st})
	defer c.Close()
	evs := typedEvents(1_000)
	for _, ev := range evs {
		if got, err := c.Match(b.Context(), ev, "1.0"); err != nil || len(got) == 0 {
			b.Fatal("no match", err)
		}
	}
	c.lists.Wait()
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		_, _ = c.Match(b.Context(), evs[i%len(evs)], "1.0")
		i++
	}
}

// TestTypedSubsMatch pins what the benchmark matches, so its figures are
// for real work: an event matches the nine subscriptions of its type that
// are not its domain wildcard, plus the 50 domain wildcards of its domain
// (one per type), in sequence order.
func TestTypedSubsMatch(t *testing.T) {
	t.Parallel()
	ix := NewIndex(typedSubs(10_000, 1_000))
	require.Empty(t, ix.Errors())
	for _, ev := range typedEvents(1_000)[:60] {
		got := ix.Match(ev, "1.0")
		require.Len(t, got, 9+50, ev.Type)
		require.True(t, slices.IsSortedFunc(got, compareSubs), "%s: not in sequence order", ev.Type)
	}
	require.Len(t, ix.Match(typedEvents(1_000)[0], "2.0"), 8+50, "a spec-bound subscription matches only its version")
}
