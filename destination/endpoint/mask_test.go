package endpoint_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination/endpoint"
)

func TestMaskTarget(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"https://receiver.example.com", "https://receiver.example.com"},
		{"https://receiver.example.com/", "https://receiver.example.com"},
		{"https://receiver.example.com/hooks/orders", "https://receiver.example.com/***"},
		{"https://user:pa55@receiver.example.com/h", "https://***@receiver.example.com/***"},
		{"https://t0ken@receiver.example.com", "https://***@receiver.example.com"},
		{"http://receiver.example.com:8443/?sig=abc", "http://receiver.example.com:8443/***"},
		{"https://hooks.slack.com/services/T000/B000/XXXXSECRET", "https://hooks.slack.com/***"},
		{"https://r.example.com/#frag", "https://r.example.com/***"},
		{"https://[2001:db8::1]:8443/x", "https://[2001:db8::1]:8443/***"},
		{"not a url", "***"},
		{"https://%zz/", "***"},
		{"", "***"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, endpoint.MaskTarget(tt.in), tt.in)
	}
}

func TestMaskTargetsInText(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{
			`send: Post "https://user:***@hooks.example.com/T0/s3cret?sig=abc": dial tcp 203.0.113.9:443: connect: connection refused`,
			`send: Post "https://***@hooks.example.com/***": dial tcp 203.0.113.9:443: connect: connection refused`,
		},
		{
			`build request: parse "https://u:pa55@h.example.com/%zz": invalid URL escape "%zz"`,
			`build request: parse "***": invalid URL escape "%zz"`,
		},
		{"receiver answered 503", "receiver answered 503"},
		{"a https://a.example/x and http://b.example:81/y?z=1 b", "a https://a.example/*** and http://b.example:81/*** b"},
		{"", ""},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, endpoint.MaskTargetsInText(tt.in), tt.in)
	}
}
