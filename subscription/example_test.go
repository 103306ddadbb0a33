package subscription_test

import (
	"encoding/json"
	"fmt"

	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/subscription"
)

// ExampleIndex_Match matches one event against an exact binding with a
// version pin and filters, a prefix glob and a one-segment wildcard.
func ExampleIndex_Match() {
	subs := []*subscription.Subscription{
		{
			ID: "01", Code: "big-us-orders", Sequence: 10, Status: subscription.StatusActive,
			EventTypes: []subscription.Binding{{EventTypeCode: "ecommerce:orders:order:created", SpecVersion: "1.1"}},
			Filters: []subscription.Filter{
				{Field: "region", Op: "eq", Value: json.RawMessage(`"us-west"`)},
				{Field: "data.amount", Op: "gte", Value: json.RawMessage(`100`)},
			},
		},
		{
			ID: "02", Code: "all-orders", Sequence: 99, Status: subscription.StatusActive,
			EventTypes: []subscription.Binding{{EventTypeCode: "ecommerce:orders:*"}},
		},
		{
			ID: "03", Code: "any-shop-created", Sequence: 50, Status: subscription.StatusActive,
			EventTypes: []subscription.Binding{{EventTypeCode: "ecommerce:*:order:created"}},
			Filters:    []subscription.Filter{{Field: "data.currency", Op: "in", Value: json.RawMessage(`["EUR", "GBP"]`)}},
		},
		{
			ID: "04", Code: "paused", Sequence: 1, Status: subscription.StatusPaused,
			EventTypes: []subscription.Binding{{EventTypeCode: "ecommerce:orders:*"}},
		},
	}
	ix := subscription.NewIndex(subs)

	ev := &cloudevent.Event{
		SpecVersion: "1.0", ID: "e1", Source: "/shop", Type: "ecommerce:orders:order:created",
		Extensions: map[string]any{"region": "us-west"},
		Data:       json.RawMessage(`{"amount": 250.00, "currency": "USD"}`),
	}
	for _, s := range ix.Match(ev, "1.1") {
		fmt.Println(s.Code)
	}
	fmt.Println("--- version 1.0")
	for _, s := range ix.Match(ev, "1.0") {
		fmt.Println(s.Code)
	}
	fmt.Println("bound:", ix.BindsEventType("ecommerce:orders:refund:issued"))
	// Output:
	// big-us-orders
	// all-orders
	// --- version 1.0
	// all-orders
	// bound: true
}
