package cloudevent_test

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/event/cloudevent"
)

func TestHeaderValue(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"order:1", "order:1"},
		{"/shop", "/shop"},
		{"2026-01-02T03:04:05Z", "2026-01-02T03:04:05Z"},
		{"", ""},
		{"a b", "a%20b"},
		{`say "hi"`, "say%20%22hi%22"},
		{"100%", "100%25"},
		{"café", "caf%C3%A9"},
		{"€", "%E2%82%AC"},
		{"tab\there", "tab%09here"},
		{"del\x7f", "del%7F"},
		{"a+b=c&d", "a+b=c&d"},
	} {
		got := cloudevent.HeaderValue(tt.in)
		require.Equal(t, tt.want, got, "%q", tt.in)
		back, err := url.PathUnescape(got)
		require.NoError(t, err)
		require.Equal(t, tt.in, back, "decoding %q gives the value back", got)
	}
}

func FuzzHeaderValue(f *testing.F) {
	for _, s := range []string{"order:1", "a b", "100%", "café", "\x00\xff", `"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := cloudevent.HeaderValue(in)
		for i := range len(got) {
			c := got[i]
			if c <= ' ' || c >= 0x7f || c == '"' {
				t.Fatalf("HeaderValue(%q) = %q: byte %#x left unencoded", in, got, c)
			}
		}
		back, err := url.PathUnescape(got)
		if err != nil || back != in {
			t.Fatalf("HeaderValue(%q) = %q decodes to %q, %v", in, got, back, err)
		}
	})
}
