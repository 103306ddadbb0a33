package event

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateEventTypeCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code string
		ok   bool
	}{
		{"ecommerce:orders:order:created", true},
		{"order.created", true},
		{"a:b", true},
		{"a_1:b-2", true},
		{"a:b:c:d:e:f:g:h", true},
		{"a:b:c:d:e:f:g:h:i", false},
		{"order", false},
		{"", false},
		{"a:b.c", false},
		{"a::b", false},
		{":a:b", false},
		{"a:b:", false},
		{"Order:created", false},
		{"order:*", false},
		{"order created:x", false},
		{"ordér:created", false},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			t.Parallel()
			err := ValidateTypeCode(tt.code)
			if tt.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}

func TestValidatePattern(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern string
		ok      bool
	}{
		{"ecommerce:orders:order:created", true},
		{"ecommerce:orders:*", true},
		{"ecommerce:*:order:created", true},
		{"ecommerce:*:order:*", true},
		{"*:created", true},
		{"order.*", true},
		{"*:*", true},
		{"*", false},
		{"ecommerce:order*", false},
		{"ecommerce:**", false},
		{"ecommerce:*.x", false},
		{"a:b:c:d:e:f:g:*", true},
		{"a:b:c:d:e:f:g:h:*", false},
		{"", false},
		{"ecommerce:", false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			t.Parallel()
			err := ValidateTypePattern(tt.pattern)
			if tt.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}

func TestMatchPattern(t *testing.T) {
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
			require.Equal(t, tt.want, MatchTypePattern(tt.pattern, tt.code))
		})
	}
}
