package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCreateRefusesEveryNonPublicClass: the create-time target check uses
// the dialer's classifier (router.AddrClass), so the IPv6 forms that reach
// IPv4 space or are not public, and the IPv4 documentation blocks, are
// refused at /target (/targetUrl for a TASK job) — literal addresses only,
// nothing is resolved. A public address passes.
func TestCreateRefusesEveryNonPublicClass(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, func(c *serverConfig) { c.AllowPrivateTargets = false })
	createType(t, s, "order.created")
	for _, host := range []string{
		"[::127.0.0.1]", "[::ffff:10.0.0.1]", "[64:ff9b::7f00:1]", "[64:ff9b:1::a00:1]", "[2002:7f00:1::1]",
		"[2001::1]", "[fec0::1]", "[fd00::1]", "[100::1]", "[2001:db8::1]", "[2001:20::1]", "[3fff::1]", "[ff02::1]",
		"0.0.0.0", "192.0.2.1", "198.51.100.1", "203.0.113.1", "198.18.0.1", "240.0.0.1", "255.255.255.255", "192.88.99.1",
	} {
		resp, got := s.do(t, http.MethodPost, "/api/subscriptions",
			`{"code":"c","eventTypes":[{"eventTypeCode":"order.created"}],"target":"https://`+host+`/hook"}`)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%s: %v", host, got)
		require.Equal(t, "/target", got["errors"].([]any)[0].(map[string]any)["pointer"], host)
		resp, got = s.do(t, http.MethodPost, "/api/dispatch-jobs", taskBody("targetUrl", "https://"+host+"/hook"))
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%s: %v", host, got)
		require.Equal(t, "/targetUrl", got["errors"].([]any)[0].(map[string]any)["pointer"], host)
	}
	resp, got := s.do(t, http.MethodPost, "/api/subscriptions",
		`{"code":"ok","eventTypes":[{"eventTypeCode":"order.created"}],"target":"https://[64:ff9b::808:808]/hook"}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "NAT64 of a public IPv4 address: %v", got)
}
