package main

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHTTPServerLimits checks the limits listenAndServe sets: headers over
// 64 KiB are refused with 431 before any handler runs, and the request id
// comes back on an ordinary answer.
func TestHTTPServerLimits(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, nil)
	addr := strings.TrimPrefix(gw.base, "http://")

	conn, err := new(net.Dialer).DialContext(t.Context(), "tcp", addr)
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
	_, err = conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 200<<10) + "\r\n\r\n"))
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)

	status, hdr, _ := gw.do(t, "GET", "/healthz", "", "", map[string]string{"X-Request-Id": "lb-42"})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "lb-42", hdr.Get("X-Request-Id"))
}
