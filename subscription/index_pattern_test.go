package subscription

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/event"
)

// The matching index and event.MatchTypePattern (tested with its own table
// in package event) agree on every pattern × code pair: exact codes, inner
// wildcards, prefix globs, both separators, near misses.
func TestIndexAgreesWithMatchTypePattern(t *testing.T) {
	t.Parallel()
	patterns := []string{
		"ecommerce:orders:order:created", "ecommerce:orders:*", "ecommerce:*:order:*", "*:created", "*:*",
		"order.*", "order:*",
	}
	codes := []string{
		"ecommerce:orders:order:created", "ecommerce:orders:order:updated", "ecommerce:orders:refund",
		"ecommerce:orders", "ecommerce:eu:order:line:added", "ecommerce:eu:refund:created", "order:created",
		"order:line:created", "a:b:c", "order.created", "order:Created",
	}
	for _, p := range patterns {
		ix := NewIndex([]*Subscription{testSub("s", 1, p)})
		for _, code := range codes {
			want := event.MatchTypePattern(p, code)
			require.Equal(t, want, len(ix.Match(testEvent(code), "")) == 1, "%s matching %s", p, code)
			require.Equal(t, want, ix.BindsEventType(code), "%s binding %s", p, code)
		}
	}
}
