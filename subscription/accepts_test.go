package subscription_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/subscription"
)

func TestAccepts(t *testing.T) {
	t.Parallel()
	sub := &subscription.Subscription{
		ID: "s1", Code: "orders", Status: subscription.StatusPaused,
		EventTypes: []subscription.Binding{{EventTypeCode: "order.*"}, {EventTypeCode: "refund.created", SpecVersion: "2.0"}},
		Filters:    []subscription.Filter{{Field: "region", Op: "eq", Value: json.RawMessage(`"eu"`)}},
	}
	ev := func(typ, region string) *cloudevent.Event {
		e := &cloudevent.Event{SpecVersion: "1.0", ID: "1", Source: "/s", Type: typ, Extensions: map[string]any{}}
		if region != "" {
			e.Extensions["region"] = region
		}
		return e
	}
	tests := []struct {
		name    string
		ev      *cloudevent.Event
		version string
		want    bool
	}{
		{"pattern and filter pass", ev("order.created", "eu"), "", true},
		{"filter fails", ev("order.created", "us"), "", false},
		{"field absent", ev("order.created", ""), "", false},
		{"type unbound", ev("invoice.created", "eu"), "", false},
		{"specVersion matches", ev("refund.created", "eu"), "2.0", true},
		{"specVersion differs", ev("refund.created", "eu"), "1.0", false},
	}
	acc := subscription.NewAcceptor(sub)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, subscription.Accepts(sub, tt.ev, tt.version))
			require.Equal(t, tt.want, acc.Accepts(tt.ev, tt.version))
		})
	}
	require.Equal(t, subscription.StatusPaused, sub.Status, "Accepts must not change the subscription")
}
