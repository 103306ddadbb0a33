package api_test

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// accessLogAddr sends one request with the given forwarding headers and
// returns the remote_addr of its access log line.
func accessLogAddr(t *testing.T, proxies []netip.Prefix, headers ...string) string {
	t.Helper()
	logs := &syncBuffer{}
	ts := newTestServer(t, func(c *serverConfig) {
		c.Logger = newJSONLogger(logs)
		c.TrustedProxies = proxies
	})
	resp, _ := ts.do(t, http.MethodGet, "/api/event-types", nil, append([]string{"X-Request-Id", "xff-1"}, headers...)...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	for line := range strings.SplitSeq(logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != "request" || rec["request_id"] != "xff-1" {
			continue
		}
		return rec["remote_addr"].(string)
	}
	t.Fatalf("no access log line in %s", logs.String())
	return ""
}

// TestAccessLogTrustsNoProxyByDefault: without configured proxies, a
// client cannot choose the address it is logged under with X-Forwarded-For
// or X-Real-IP; a configured proxy's forwarding headers are believed.
func TestAccessLogTrustsNoProxyByDefault(t *testing.T) {
	t.Parallel()
	require.Equal(t, "127.0.0.1", accessLogAddr(t, nil, "X-Forwarded-For", "203.0.113.7"))
	require.Equal(t, "127.0.0.1", accessLogAddr(t, nil, "X-Real-IP", "203.0.113.7"))
	require.Equal(t, "127.0.0.1", accessLogAddr(t, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, "X-Forwarded-For", "203.0.113.7"),
		"a proxy list that does not hold the peer trusts nothing it sends")
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	require.Equal(t, "203.0.113.7", accessLogAddr(t, loopback, "X-Forwarded-For", "203.0.113.7"))
	require.Equal(t, "198.51.100.2", accessLogAddr(t, loopback, "X-Forwarded-For", "203.0.113.7, 198.51.100.2"),
		"the right-most address not itself a trusted proxy")
}
