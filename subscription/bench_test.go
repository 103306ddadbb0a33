package subscription

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/hooklane/hooklane/event/cloudevent"
)

// benchSubs returns n subscriptions spread over n/4 event types (four per
// type: exact with two filters, exact without, a prefix glob of its app, and
// a one-segment wildcard), so the candidates of one type stay few whatever n.
func benchSubs(n int) []*Subscription {
	subs := make([]*Subscription, 0, n)
	for i := range n {
		typ := i / 4
		app, entity := typ/16, typ%16
		code := fmt.Sprintf("app%d:entity%d:created", app, entity)
		var s *Subscription
		switch i % 4 {
		case 0:
			s = testSub("s"+strconv.Itoa(i), i%10, code)
			s.Filters = []Filter{filter("region", "eq", `"us-west"`), filter("data.amount", "gte", `100`)}
		case 1:
			s = testSub("s"+strconv.Itoa(i), i%10, code)
		case 2:
			s = testSub("s"+strconv.Itoa(i), i%10, fmt.Sprintf("app%d:entity%d:*", app, entity))
		default:
			s = testSub("s"+strconv.Itoa(i), i%10, fmt.Sprintf("app%d:*:created", app))
		}
		s.ID = fmt.Sprintf("%08d", i)
		subs = append(subs, s)
	}
	return subs
}

func benchEvent() *cloudevent.Event {
	return &cloudevent.Event{
		SpecVersion: "1.0", ID: "e1", Source: "/bench", Type: "app0:entity1:created",
		Extensions: map[string]any{"region": "us-west"},
		Data:       json.RawMessage(`{"amount": 150, "currency": "EUR", "customer": {"id": "c1"}}`),
	}
}

// BenchmarkIndexMatch shows the cost of Match does not grow with the number
// of subscriptions: the event's candidates are found by map and trie.
func BenchmarkIndexMatch(b *testing.B) {
	for _, n := range []int{10, 1_000, 10_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			ix := NewIndex(benchSubs(n))
			ev := benchEvent()
			if len(ix.Match(ev, "")) == 0 {
				b.Fatal("no match")
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				_ = ix.Match(ev, "")
			}
		})
	}
}

// BenchmarkCacheMatch is Match through the cache, whose candidate lists
// come from ristretto.
func BenchmarkCacheMatch(b *testing.B) {
	for _, n := range []int{10, 1_000, 10_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			st := &fakeStore{}
			st.set(benchSubs(n)...)
			c := NewCache(CacheConfig{Store: st})
			defer c.Close()
			ev := benchEvent()
			if got, err := c.Match(b.Context(), ev, ""); err != nil || len(got) == 0 {
				b.Fatal("no match", err)
			}
			c.lists.Wait()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				_, _ = c.Match(b.Context(), ev, "")
			}
		})
	}
}

// BenchmarkNewIndex is the cost of a rebuild.
func BenchmarkNewIndex(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			subs := benchSubs(n)
			b.ReportAllocs()
			for b.Loop() {
				_ = NewIndex(subs)
			}
		})
	}
}

// BenchmarkFilterEval evaluates compiled filters on one event (data
// decoded once per iteration, as per event).
func BenchmarkFilterEval(b *testing.B) {
	cases := []struct {
		name string
		fs   []Filter
	}{
		{"attribute_eq", []Filter{filter("region", "eq", `"us-west"`)}},
		{"attribute_in", []Filter{filter("region", "in", `["eu", "us-east", "us-west"]`)}},
		{"data_gte", []Filter{filter("data.amount", "gte", `100`)}},
		{"data_three", []Filter{
			filter("data.amount", "gte", `100`),
			filter("data.currency", "eq", `"EUR"`),
			filter("data.customer.id", "prefix", `"c"`),
		}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			cfs := make([]compiledFilter, len(tc.fs))
			for i, f := range tc.fs {
				cf, err := compileFilter(f)
				if err != nil {
					b.Fatal(err)
				}
				cfs[i] = cf
			}
			ev := benchEvent()
			b.ReportAllocs()
			for b.Loop() {
				v := eventView{ev: ev}
				for i := range cfs {
					if !cfs[i].eval(&v) {
						b.Fatal("filter failed")
					}
				}
			}
		})
	}
}
