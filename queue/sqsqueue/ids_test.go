package sqsqueue

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSQSID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		in     string
		hashed bool
	}{
		{"plain", "evt_01HZ-sub_42", false},
		{"every punctuation", "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", false},
		{"128 chars", strings.Repeat("a", 128), false},
		{"129 chars", strings.Repeat("a", 129), true},
		{"space", "a b", true},
		{"tab", "a\tb", true},
		{"non-ascii", "ünïcode", true},
		{"DEL", "a\x7f", true},
		{"empty", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := sqsID(tt.in)
			require.True(t, validID(got), "result %q must be valid", got)
			if !tt.hashed {
				require.Equal(t, tt.in, got)
				return
			}
			require.NotEqual(t, tt.in, got)
			require.True(t, strings.HasPrefix(got, hashedIDPrefix))
			require.Len(t, got, len(hashedIDPrefix)+64)
			require.Equal(t, got, sqsID(tt.in), "hashing must be stable")
			require.NotEqual(t, got, sqsID(tt.in+"x"), "different ids must hash apart")
		})
	}
}

func TestCeilSeconds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   time.Duration
		want int32
	}{
		{-time.Second, 0},
		{0, 0},
		{time.Nanosecond, 1},
		{999 * time.Millisecond, 1},
		{time.Second, 1},
		{1001 * time.Millisecond, 2},
		{20 * time.Second, 20},
		{MaxVisibility, 43200},
		{MaxVisibility + time.Hour, 43200},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, ceilSeconds(tt.in), "ceilSeconds(%s)", tt.in)
	}
}

func TestValidBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []byte
		want bool
	}{
		{"empty", nil, true},
		{"json", []byte(`{"a":1}`), true},
		{"tab cr lf", []byte("\t\r\n"), true},
		{"unicode", []byte("ünïcode ✓"), true},
		{"supplementary plane", []byte("🚀"), false},
		{"nul", []byte{0}, false},
		{"control", []byte{0x1f}, false},
		{"invalid utf-8", []byte{0xff}, false},
		{"truncated utf-8", []byte("ü")[:1], false},
		{"U+FFFE", []byte("\uFFFE"), false},
		{"U+FFFD", []byte("\uFFFD"), true},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, validBody(tt.in), tt.name)
		body, attrs := encodeBody(tt.in, nil)
		require.Equal(t, !tt.want, attrs != nil, tt.name)
		back, err := decodeBody(body, attrs)
		require.NoError(t, err)
		require.Equal(t, string(tt.in), string(back), tt.name)
	}
}
