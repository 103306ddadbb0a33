package webhook_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/router/webhook"
	"github.com/hooklane/hooklane/subscription"
)

func TestIsPublicAddr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr   string
		public bool
	}{
		{"127.0.0.1", false},
		{"127.1.2.3", false},
		{"10.0.0.1", false},
		{"172.16.5.4", false},
		{"192.168.1.1", false},
		{"169.254.169.254", false}, // link-local: cloud metadata
		{"100.64.0.1", false},      // CGNAT
		{"100.127.255.254", false}, // CGNAT
		{"0.0.0.0", false},
		{"224.0.0.1", false},
		{"255.255.255.255", false},
		{"::1", false},
		{"::", false},
		{"fe80::1", false},
		{"fc00::1", false},
		{"ff02::1", false},
		{"::ffff:127.0.0.1", false}, // IPv4-mapped loopback
		{"::ffff:10.1.2.3", false},
		{"::ffff:169.254.169.254", false},
		{"8.8.8.8", true},
		{"100.63.255.255", true},
		{"100.128.0.1", true},
		{"2606:4700:4700::1111", true},
		{"::ffff:8.8.8.8", true},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.public, webhook.IsPublicAddr(netip.MustParseAddr(tt.addr)))
		})
	}
}

// TestCheckTargetLiterals: the create-time check refuses literal private
// addresses without resolving anything.
func TestCheckTargetLiterals(t *testing.T) {
	t.Parallel()
	for _, host := range []string{"127.0.0.1", "10.1.1.1", "169.254.169.254", "100.64.3.3", "::1", "::ffff:127.0.0.1", "fe80::1"} {
		require.ErrorIs(t, webhook.CheckTarget(t.Context(), net.DefaultResolver, host), webhook.ErrPrivateTarget, host)
	}
	require.NoError(t, webhook.CheckTarget(t.Context(), net.DefaultResolver, "8.8.8.8"))
}

// TestCheckTargetResolvesName: a hostname resolving to 127.0.0.1 is refused
// at create time. The resolver is a custom one answering every name with
// 127.0.0.1 (a stand-in for an attacker's DNS).
func TestCheckTargetResolvesName(t *testing.T) {
	t.Parallel()
	dns := startDNS(t, netip.MustParseAddr("127.0.0.1"))
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", dns)
	}}
	require.ErrorIs(t, webhook.CheckTarget(t.Context(), resolver, "evil.example.com"), webhook.ErrPrivateTarget)
}

// TestDialerRefusesPrivateAtConnect: with the guard on, the dialer refuses
// every non-public resolved address at connect time, however the target is
// written: literal, a name resolving to loopback, IPv6 loopback, mapped.
func TestDialerRefusesPrivateAtConnect(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	dial := webhook.NewDialContext(false, 2*time.Second)
	for _, host := range []string{"127.0.0.1", "localhost", "[::1]", "[::ffff:127.0.0.1]", "10.255.255.1", "169.254.169.254", "100.64.0.1"} {
		t.Run(host, func(t *testing.T) {
			t.Parallel()
			addr := host + ":" + port
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
			defer cancel()
			conn, err := dial(ctx, "tcp", addr)
			if conn != nil {
				_ = conn.Close()
			}
			require.ErrorIs(t, err, webhook.ErrPrivateTarget)
		})
	}
	// The same dialer with the allow option reaches the server.
	conn, err := webhook.NewDialContext(true, 2*time.Second)(t.Context(), "tcp", "127.0.0.1:"+port)
	require.NoError(t, err)
	require.NoError(t, conn.Close())
}

// TestMediatorRefusesPrivateTarget: a delivery to a loopback receiver with
// the guard on fails permanently and never reaches the receiver.
func TestMediatorRefusesPrivateTarget(t *testing.T) {
	t.Parallel()
	hit := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		hit <- struct{}{}
	}))
	t.Cleanup(srv.Close)
	med := webhook.New(webhook.Config{UserAgent: "hooklane/test"})
	t.Cleanup(med.Close)
	for _, target := range []string{srv.URL, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)} {
		res := med.Deliver(t.Context(), &router.Delivery{
			Job: &dispatch.Job{
				ID: "01JOB", Kind: dispatch.KindTask, TargetURL: target, TimeoutSeconds: 2,
				Payload: []byte(`{}`), Secret: subscription.NewSecret(),
			},
			Attempt: 1,
		})
		require.ErrorIs(t, res.Err, webhook.ErrPrivateTarget, target)
		require.True(t, dispatch.IsPermanent(res.Err))
	}
	require.Empty(t, hit)
}

// startDNS serves a minimal DNS server on 127.0.0.1 answering every A query
// with ip and every other query with no answer. It returns its address.
func startDNS(t *testing.T, ip netip.Addr) string {
	t.Helper()
	pc, err := new(net.ListenConfig).ListenPacket(t.Context(), "udp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = pc.Close()
		<-done
	})
	go func() {
		defer close(done)
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := dnsAnswer(buf[:n], ip); resp != nil {
				_, _ = pc.WriteTo(resp, from)
			}
		}
	}()
	return pc.LocalAddr().String()
}

// dnsAnswer builds the response to one query: the header with QR set, the
// question echoed, and one A record when the query asks for A.
func dnsAnswer(q []byte, ip netip.Addr) []byte {
	if len(q) < 12 {
		return nil
	}
	// Find the end of the question name.
	i := 12
	for i < len(q) && q[i] != 0 {
		i += int(q[i]) + 1
	}
	if i+5 > len(q) {
		return nil
	}
	qEnd := i + 5
	qtype := int(q[i+1])<<8 | int(q[i+2])
	resp := make([]byte, 0, qEnd+16)
	resp = append(resp, q[0], q[1], 0x81, 0x80, 0, 1)
	if qtype == 1 {
		resp = append(resp, 0, 1)
	} else {
		resp = append(resp, 0, 0)
	}
	resp = append(resp, 0, 0, 0, 0)
	resp = append(resp, q[12:qEnd]...)
	if qtype == 1 {
		a := ip.As4()
		resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, a[0], a[1], a[2], a[3])
	}
	return resp
}
