package subscription

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDecimalCmp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"1", "1.0", 0},
		{"1", "1e0", 0},
		{"100", "1e2", 0},
		{"100", "1E+2", 0},
		{"0.01", "1e-2", 0},
		{"0", "-0", 0},
		{"0", "0.000", 0},
		{"0", "0e10", 0},
		{"-1", "1", -1},
		{"-2", "-1", -1},
		{"-1.5", "-1.25", -1},
		{"0", "-0.0001", 1},
		{"0.1", "0.09", 1},
		{"10", "9.99999", 1},
		{"12345678901234567890", "12345678901234567891", -1},
		{"9007199254740993", "9007199254740992", 1}, // not representable as float64
		{"1.000000000000000000001", "1", 1},
		{"120", "12e1", 0},
		{"0.0012", "0.00120", 0},
		{"1e400", "1e399", 1},
		{"-1e400", "1e-400", -1},
		{"1e-400", "0", 1},
		{"123.45", "123.5", -1},
		{"1e99999999999999999999999", "1e99999999999999999999999", 0},
	}
	for _, tt := range tests {
		t.Run(tt.a+"_vs_"+tt.b, func(t *testing.T) {
			t.Parallel()
			a, ok := parseDecimal(tt.a)
			require.True(t, ok)
			b, ok := parseDecimal(tt.b)
			require.True(t, ok)
			require.Equal(t, tt.want, a.cmp(b))
			require.Equal(t, -tt.want, b.cmp(a))
		})
	}
}

func TestParseDecimalRejects(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "-", "1.", ".5", "1e", "1e+", "abc", "1x", "--1", "1.2.3", "NaN"} {
		_, ok := parseDecimal(s)
		require.False(t, ok, s)
	}
}
