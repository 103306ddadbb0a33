package subscription

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/event/cloudevent"
)

func clientSub(code, clientID string, bindings ...string) *Subscription {
	s := testSub(code, 50, bindings...)
	s.ID = clientID + "/" + code
	if clientID != "" {
		s.ClientID = &clientID
	}
	return s
}

func clientEvent(clientID string) *cloudevent.Event {
	ev := testEvent("shop:order:created")
	if clientID != "" {
		if ev.Extensions == nil {
			ev.Extensions = map[string]any{}
		}
		ev.Extensions[ClientExtension] = clientID
	}
	return ev
}

// API.md §11: an event of client C matches C's subscriptions and the
// anchor-level ones; an event with no client only the anchor-level ones.
func TestIndexMatchByClient(t *testing.T) {
	t.Parallel()
	anchor := clientSub("anchor", "", "shop:order:created")
	anchorGlob := clientSub("anchor-glob", "", "shop:*")
	acme := clientSub("acme", "acme", "shop:order:created")
	acmeGlob := clientSub("acme-glob", "acme", "shop:*:created")
	globex := clientSub("globex", "globex", "shop:order:created")
	ix := NewIndex([]*Subscription{anchor, anchorGlob, acme, acmeGlob, globex})

	require.Equal(t, []string{"acme", "acme-glob", "anchor", "anchor-glob"},
		codes(ix.Match(clientEvent("acme"), "")))
	require.Equal(t, []string{"anchor", "anchor-glob", "globex"},
		codes(ix.Match(clientEvent("globex"), "")))
	require.Equal(t, []string{"anchor", "anchor-glob"},
		codes(ix.Match(clientEvent(""), "")), "no client: anchor-level only")
	require.Equal(t, []string{"anchor", "anchor-glob"},
		codes(ix.Match(clientEvent("initech"), "")), "a client without subscriptions")
	require.True(t, ix.BindsEventType("shop:order:created"))
	require.True(t, NewIndex([]*Subscription{acmeGlob}).BindsEventType("shop:refund:created"), "a client's pattern binds too")
}

// The Cache keys its candidate lists by client, so a list computed for one
// client is never served to another.
func TestCacheMatchByClient(t *testing.T) {
	t.Parallel()
	acme := clientSub("acme", "acme", "shop:order:created")
	anchor := clientSub("anchor", "", "shop:order:created")
	c := NewCache(CacheConfig{Store: &fakeStore{subs: []*Subscription{acme, anchor}, gen: 1}})
	defer c.Close()
	for range 3 { // the second and third rounds come from the candidate cache
		got, err := c.Match(t.Context(), clientEvent("acme"), "")
		require.NoError(t, err)
		require.Equal(t, []string{"acme", "anchor"}, codes(got))
		got, err = c.Match(t.Context(), clientEvent(""), "")
		require.NoError(t, err)
		require.Equal(t, []string{"anchor"}, codes(got))
		got, err = c.Match(t.Context(), clientEvent("globex"), "")
		require.NoError(t, err)
		require.Equal(t, []string{"anchor"}, codes(got))
	}
}

// benchClientSubs returns clients × perClient subscriptions, each client's
// spread over the event types of benchSubs, plus 10 anchor-level ones.
func benchClientSubs(clients, perClient int) []*Subscription {
	subs := benchSubs(10)
	for i := range clients {
		id := fmt.Sprintf("client-%05d", i)
		for j, s := range benchSubs(perClient) {
			c := *s
			c.ID = fmt.Sprintf("%s-%03d", id, j)
			c.ClientID = &id
			subs = append(subs, &c)
		}
	}
	return subs
}

// BenchmarkIndexMatchClients shows the cost of matching an event of one
// client stays flat from 1 to 10,000 clients of 10 subscriptions each: the
// index looks only at the anchor partition and that client's.
func BenchmarkIndexMatchClients(b *testing.B) {
	for _, n := range []int{1, 100, 1_000, 10_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			ix := NewIndex(benchClientSubs(n, 10))
			ev := benchEvent()
			ev.Extensions[ClientExtension] = fmt.Sprintf("client-%05d", n/2)
			anchorOnly := len(NewIndex(benchSubs(10)).Match(ev, ""))
			if got := len(ix.Match(ev, "")); anchorOnly == 0 || got != 2*anchorOnly {
				b.Fatalf("matched %d, want %d (the anchor-level ones and as many of the client)", got, 2*anchorOnly)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				_ = ix.Match(ev, "")
			}
		})
	}
}
