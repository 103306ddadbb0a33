package subscription

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/event"
)

// The matching index and event.MatchTypePattern agree on every pattern.
func TestIndexAgreesWithMatchTypePattern(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern, code string
		want          bool
	}{
		{"ecommerce:orders:order:created", "ecommerce:orders:order:created", true},
		{"ecommerce:orders:order:created", "ecommerce:orders:order:updated", false},
		{"ecommerce:orders:*", "ecommerce:orders:order:created", true},
		{"ecommerce:orders:*", "ecommerce:orders:refund", true},
		{"ecommerce:orders:*", "ecommerce:orders", false},
		{"ecommerce:orders:*", "ecommerce:ordersx:a", false},
		{"ecommerce:*:order:created", "ecommerce:eu:order:created", true},
		{"ecommerce:*:order:created", "ecommerce:eu:x:order:created", false},
		{"ecommerce:*:order:created", "ecommerce:order:created", false},
		{"ecommerce:*:order:*", "ecommerce:eu:order:created", true},
		{"ecommerce:*:order:*", "ecommerce:eu:order:line:added", true},
		{"ecommerce:*:order:*", "ecommerce:eu:order", false},
		{"ecommerce:*:order:*", "ecommerce:eu:refund:created", false},
		{"*:created", "order:created", true},
		{"*:created", "order:line:created", false},
		{"*:*", "a:b:c", true},
		{"order.*", "order.created", true},
		{"order.*", "order:created", false},
		{"order:*", "order.created", false},
		{"order:*", "order:Created", false},
		{"order*", "order:created", false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+"|"+tt.code, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, event.MatchTypePattern(tt.pattern, tt.code))
			// The index agrees with MatchTypePattern.
			ix := NewIndex([]*Subscription{testSub("s", 1, tt.pattern)})
			require.Equal(t, tt.want, len(ix.Match(testEvent(tt.code), "")) == 1)
			require.Equal(t, tt.want, ix.BindsEventType(tt.code))
		})
	}
}
