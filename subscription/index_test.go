package subscription

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/event"
)

func codes(subs []*Subscription) []string {
	out := make([]string, len(subs))
	for i, s := range subs {
		out[i] = s.Code
	}
	return out
}

func TestIndexMatchOrderAndDedup(t *testing.T) {
	t.Parallel()
	a := testSub("a", 50, "ecommerce:orders:order:created")
	b := testSub("b", 10, "ecommerce:orders:*", "ecommerce:*:order:created", "ecommerce:orders:order:created")
	c := testSub("c", 50, "ecommerce:*:order:*")
	c2 := testSub("c", 50, "ecommerce:orders:order:created")
	c2.ID = "id-0" // same code and sequence: id decides, not input order
	d := testSub("d", 1, "ecommerce:orders:order:updated")
	e := testSub("e", 1, "ecommerce.orders.*") // other separator
	ix := NewIndex([]*Subscription{a, b, c, d, c2, nil, e})

	got := ix.Match(testEvent("ecommerce:orders:order:created"), "")
	require.Equal(t, []*Subscription{b, a, c2, c}, got)

	require.Equal(t, []string{"b"}, codes(ix.Match(testEvent("ecommerce:orders:refund"), "")))
	require.Equal(t, []string{"e"}, codes(ix.Match(testEvent("ecommerce.orders.refund"), "")))
	require.Empty(t, ix.Match(testEvent("billing:invoice:created"), ""))
	require.Empty(t, ix.Match(testEvent("not a code"), ""))
	require.Equal(t, 6, ix.Len())
	require.Equal(t, []string{"d", "e", "b", "a", "c", "c"}, codes(ix.Subscriptions()))
}

func TestIndexSpecVersion(t *testing.T) {
	t.Parallel()
	v11 := testSub("v11", 1)
	v11.EventTypes = []Binding{{EventTypeCode: "order:created", SpecVersion: "1.1"}}
	unpinned := testSub("any", 2, "order:created")
	// One binding pinned, another not: the unpinned one matches every
	// version.
	mixed := testSub("mixed", 3)
	mixed.EventTypes = []Binding{{EventTypeCode: "order:created", SpecVersion: "2.0"}, {EventTypeCode: "order:*"}}
	pinnedGlob := testSub("pinned-glob", 4)
	pinnedGlob.EventTypes = []Binding{{EventTypeCode: "order:*", SpecVersion: "2.0"}}
	ix := NewIndex([]*Subscription{v11, unpinned, mixed, pinnedGlob})

	tests := []struct {
		version string
		want    []string
	}{
		{"1.1", []string{"v11", "any", "mixed"}},
		{"2.0", []string{"any", "mixed", "pinned-glob"}},
		{"1.0", []string{"any", "mixed"}},
		{"", []string{"any", "mixed"}},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, codes(ix.Match(testEvent("order:created"), tt.version)), tt.version)
	}
}

func TestIndexPausedAndBroken(t *testing.T) {
	t.Parallel()
	active := testSub("active", 1, "order:created")
	paused := testSub("paused", 1, "order:created")
	paused.Status = StatusPaused
	broken := testSub("broken", 1, "order:created")
	broken.Filters = []Filter{filter("region", "between", `1`)}
	badPattern := testSub("bad-pattern", 1, "order:created", "order*:x:*")
	pausedGlob := testSub("paused-glob", 1, "invoice:*")
	pausedGlob.Status = StatusPaused
	ix := NewIndex([]*Subscription{active, paused, broken, badPattern, pausedGlob})

	require.Equal(t, []string{"active"}, codes(ix.Match(testEvent("order:created"), "")))
	require.Len(t, ix.Errors(), 2)

	// Binding checks count every subscription, paused or not.
	require.True(t, ix.BindsEventType("order:created"))
	require.True(t, ix.BindsEventType("invoice:paid"))
	require.False(t, ix.BindsEventType("invoice"))
	require.False(t, ix.BindsEventType("order:updated"))

	got, ok := ix.ByID("id-paused")
	require.True(t, ok)
	require.Same(t, paused, got)
	_, ok = ix.ByID("nope")
	require.False(t, ok)
}

func TestIndexFilters(t *testing.T) {
	t.Parallel()
	big := testSub("big", 1, "order:created")
	big.Filters = []Filter{filter("region", "eq", `"us-west"`), filter("data.amount", "gte", `100`)}
	west := testSub("west", 2, "order:*")
	west.Filters = []Filter{filter("region", "eq", `"us-west"`)}
	ix := NewIndex([]*Subscription{big, west})

	ev := withData(testEvent("order:created"), `{"amount": 150}`)
	ev.Extensions = map[string]any{"region": "us-west"}
	require.Equal(t, []string{"big", "west"}, codes(ix.Match(ev, "")))

	ev = withData(testEvent("order:created"), `{"amount": 99.99}`)
	ev.Extensions = map[string]any{"region": "us-west"}
	require.Equal(t, []string{"west"}, codes(ix.Match(ev, "")))

	ev.Extensions = map[string]any{"region": "eu"}
	require.Empty(t, ix.Match(ev, ""))
}

// TestIndexMany checks matching among many subscriptions against a linear
// scan with MatchPattern.
func TestIndexMany(t *testing.T) {
	t.Parallel()
	var subs []*Subscription
	for i := range 3000 {
		var s *Subscription
		switch i % 5 {
		case 0:
			s = testSub(fmt.Sprintf("s%04d", i), i%7, fmt.Sprintf("app%d:entity%d:created", i%13, i%11))
		case 1:
			s = testSub(fmt.Sprintf("s%04d", i), i%7, fmt.Sprintf("app%d:*", i%13))
		case 2:
			s = testSub(fmt.Sprintf("s%04d", i), i%7, fmt.Sprintf("app%d:*:created", i%13))
		case 3:
			s = testSub(fmt.Sprintf("s%04d", i), i%7, fmt.Sprintf("*:entity%d:*", i%11))
		default:
			s = testSub(fmt.Sprintf("s%04d", i), i%7, fmt.Sprintf("app%d.entity%d.created", i%13, i%11))
			s.Status = StatusPaused
		}
		subs = append(subs, s)
	}
	ix := NewIndex(subs)
	sorted := ix.Subscriptions()
	for _, code := range []string{
		"app3:entity5:created", "app12:entity0:created", "app1:x:y:z",
		"app3:entity5", "app3.entity5.created", "zzz:entity4:created",
	} {
		var want []string
		for _, s := range sorted {
			if s.Status != StatusActive {
				continue
			}
			for _, b := range s.EventTypes {
				if event.MatchTypePattern(b.EventTypeCode, code) {
					want = append(want, s.Code)
					break
				}
			}
		}
		got := codes(ix.Match(testEvent(code), ""))
		if want == nil {
			want = []string{}
		}
		require.Equal(t, want, got, code)
	}
	require.NotEmpty(t, ix.Match(testEvent("app3:entity5:created"), ""))
}

// TestIndexOperationalEventSkipsItsSubject: an operational event (source
// /hooklane) about a subscription matches every other subscription to its
// type, never that one; the same extension on an event of another source
// changes nothing.
func TestIndexOperationalEventSkipsItsSubject(t *testing.T) {
	t.Parallel()
	ops := testSub("ops", 1, "hooklane.*")
	pager := testSub("pager", 2, "hooklane.subscription.circuit.opened")
	ix := NewIndex([]*Subscription{ops, pager})
	ev := testEvent("hooklane.subscription.circuit.opened")
	ev.Source = OperationalSource
	ev.Extensions = map[string]any{ExtSubscriptionID: ops.ID}
	require.Equal(t, []string{"pager"}, codes(ix.Match(ev, "")), "ops does not hear about itself")
	ev.Extensions[ExtSubscriptionID] = pager.ID
	require.Equal(t, []string{"ops"}, codes(ix.Match(ev, "")))
	ev.Extensions[ExtSubscriptionID] = "someone-else"
	require.Equal(t, []string{"ops", "pager"}, codes(ix.Match(ev, "")))
	ev.Source = "/shop"
	ev.Extensions[ExtSubscriptionID] = ops.ID
	require.Equal(t, []string{"ops", "pager"}, codes(ix.Match(ev, "")), "only the gateway's own events are about a subscription")
}
