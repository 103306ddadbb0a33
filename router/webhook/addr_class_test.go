package webhook_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/router/webhook"
)

// TestAddrClass walks every class of the IANA IPv4 and IPv6 special-purpose
// registries (plus multicast, reserved and deprecated space): each address
// the guard must refuse names its class, and the public addresses pass. It
// is a pure function: nothing is resolved or dialled.
func TestAddrClass(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr string
		// class is a part of the class name; "" means public.
		class string
	}{
		// IPv4.
		{"0.0.0.0", "this network"},
		{"0.1.2.3", "this network"},
		{"10.0.0.1", "private (10.0.0.0/8)"},
		{"100.64.0.1", "CGNAT"},
		{"100.127.255.254", "CGNAT"},
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"169.254.169.254", "link-local"},
		{"172.16.0.1", "private (172.16.0.0/12)"},
		{"172.31.255.254", "private (172.16.0.0/12)"},
		{"192.0.0.1", "IETF protocol assignments"},
		{"192.0.0.8", "IETF protocol assignments"},   // IPv4 dummy address
		{"192.0.0.9", "IETF protocol assignments"},   // PCP anycast: no receiver lives there
		{"192.0.0.170", "IETF protocol assignments"}, // NAT64 discovery
		{"192.0.2.1", "TEST-NET-1"},
		{"192.88.99.1", "6to4 relay anycast"},
		{"192.168.1.1", "private (192.168.0.0/16)"},
		{"198.18.0.1", "benchmarking"},
		{"198.19.255.254", "benchmarking"},
		{"198.51.100.7", "TEST-NET-2"},
		{"203.0.113.9", "TEST-NET-3"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"240.0.0.1", "reserved"},
		{"255.255.255.254", "reserved"},
		{"255.255.255.255", "limited broadcast"},
		// IPv4 public, also at the edges of refused blocks.
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"100.63.255.255", ""},
		{"100.128.0.1", ""},
		{"172.15.255.255", ""},
		{"172.32.0.1", ""},
		{"192.0.1.1", ""},
		{"192.31.196.1", ""}, // AS112, globally reachable
		{"192.175.48.1", ""}, // AS112 direct delegation, globally reachable
		{"198.17.255.255", ""},
		{"198.20.0.1", ""},
		{"223.255.255.254", ""},

		// IPv6.
		{"::", "unspecified"},
		{"::1", "loopback (::1)"},
		{"::127.0.0.1", "IPv4-compatible"},
		{"::8.8.8.8", "IPv4-compatible"}, // refused outright, whatever it carries
		{"::a00:1", "IPv4-compatible"},
		{"::ffff:127.0.0.1", "IPv4-mapped loopback"},
		{"::ffff:10.1.2.3", "IPv4-mapped private"},
		{"::ffff:169.254.169.254", "IPv4-mapped link-local"},
		{"::ffff:100.64.0.1", "IPv4-mapped shared address space"},
		{"::ffff:0:10.0.0.1", "outside 2000::/3"}, // IPv4-translated (SIIT)
		{"64:ff9b::127.0.0.1", "NAT64 (64:ff9b::/96) of loopback"},
		{"64:ff9b::10.0.0.1", "NAT64 (64:ff9b::/96) of private"},
		{"64:ff9b::a9fe:a9fe", "NAT64 (64:ff9b::/96) of link-local"},
		{"64:ff9b::192.0.2.1", "NAT64 (64:ff9b::/96) of documentation"},
		{"64:ff9b:1::a00:1", "NAT64 local-use"},
		{"64:ff9b:1:ffff::8.8.8.8", "NAT64 local-use"},
		{"100::1", "discard-only"},
		{"100:0:0:1::1", "dummy prefix"},
		{"2001::1", "Teredo"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"},
		{"2001:1::1", "IETF protocol assignments"}, // PCP anycast
		{"2001:2::1", "benchmarking"},
		{"2001:3::1", "IETF protocol assignments"}, // AMT
		{"2001:4:112::1", "IETF protocol assignments"},
		{"2001:10::1", "ORCHID, deprecated"},
		{"2001:20::1", "ORCHIDv2"},
		{"2001:30::1", "IETF protocol assignments"}, // DRIP
		{"2001:1ff::1", "IETF protocol assignments"},
		{"2001:db8::1", "documentation (2001:db8::/32)"},
		{"2002::1", "6to4"},
		{"2002:7f00:1::1", "6to4"},  // carries 127.0.0.1
		{"2002:808:808::1", "6to4"}, // carries 8.8.8.8: refused outright too
		{"3fff::1", "documentation (3fff::/20)"},
		{"3fff:fff::1", "documentation (3fff::/20)"},
		{"5f00::1", "SRv6 SIDs"},
		{"fc00::1", "unique local"},
		{"fd12:3456:789a::1", "unique local"},
		{"fe80::1", "link-local (fe80::/10)"},
		{"fe80::1%eth0", "scoped address"},
		{"fec0::1", "site-local"},
		{"feff::1", "site-local"},
		{"ff02::1", "multicast (ff00::/8)"},
		{"ff0e::1", "multicast (ff00::/8)"},
		{"4000::1", "outside 2000::/3"},
		{"1::1", "outside 2000::/3"},
		// IPv6 public.
		{"2606:4700:4700::1111", ""},
		{"2a00:1450:4001:82a::200e", ""},
		{"2001:200::1", ""}, // just past 2001::/23
		{"2003::1", ""},
		{"2620:4f:8000::1", ""}, // AS112 direct delegation, globally reachable
		{"3ffe::1", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::8.8.8.8", ""}, // NAT64 of a public IPv4 (DNS64 networks)
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			t.Parallel()
			ip := netip.MustParseAddr(tt.addr)
			got := webhook.AddrClass(ip)
			if tt.class == "" {
				require.Empty(t, got, "%s must be public", tt.addr)
				require.True(t, webhook.IsPublicAddr(ip))
				return
			}
			require.Contains(t, got, tt.class)
			require.False(t, webhook.IsPublicAddr(ip))
		})
	}
	require.NotEmpty(t, webhook.AddrClass(netip.Addr{}), "the zero address is refused")
}

// fakeResolver answers every name with fixed addresses: an injected
// resolver, so the test never touches DNS or the network.
type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

// TestCheckTargetUsesTheClassifier: the create-time check refuses a name
// when any address it resolves to is of a refused class — the same
// classification as the dialer — and names that class.
func TestCheckTargetUsesTheClassifier(t *testing.T) {
	t.Parallel()
	mk := func(addrs ...string) []netip.Addr {
		out := make([]netip.Addr, len(addrs))
		for i, a := range addrs {
			out[i] = netip.MustParseAddr(a)
		}
		return out
	}
	res := fakeResolver{
		"public.example":    mk("8.8.8.8", "2606:4700:4700::1111", "64:ff9b::1.1.1.1"),
		"nat64.example":     mk("64:ff9b::a9fe:a9fe"),
		"sixtofour.example": mk("2002:a00:1::1"),
		"compat.example":    mk("::10.0.0.1"),
		"mixed.example":     mk("8.8.8.8", "fec0::1"),
		"teredo.example":    mk("2001:0:4136:e378:8000:63bf:3fff:fdd2"),
		"cgnat.example":     mk("100.100.100.100"),
		"ula.example":       mk("fd00::1"),
	}
	require.NoError(t, webhook.CheckTarget(t.Context(), res, "public.example"))
	for host, class := range map[string]string{
		"nat64.example": "link-local", "sixtofour.example": "6to4", "compat.example": "IPv4-compatible",
		"mixed.example": "site-local", "teredo.example": "Teredo", "cgnat.example": "CGNAT", "ula.example": "unique local",
	} {
		err := webhook.CheckTarget(t.Context(), res, host)
		require.ErrorIs(t, err, webhook.ErrPrivateTarget, host)
		require.Contains(t, err.Error(), class, "%s: %v", host, err)
	}
	for _, lit := range []string{"::127.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::1", "fec0::1", "198.18.0.1", "255.255.255.255"} {
		require.ErrorIs(t, webhook.CheckTarget(t.Context(), res, lit), webhook.ErrPrivateTarget, lit)
	}
	require.NoError(t, webhook.CheckTarget(t.Context(), res, "64:ff9b::808:808"))
	require.Error(t, webhook.CheckTarget(t.Context(), res, "unknown.example"))
}
