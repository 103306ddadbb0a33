package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// ErrPrivateTarget is returned when a webhook target resolves to an address
// that is not public (SSRF guard).
var ErrPrivateTarget = errors.New("target resolves to a non-public address")

// addrRange is one block of addresses a webhook may not reach, with the
// name an error gives it.
type addrRange struct {
	prefix netip.Prefix
	class  string
}

// nonPublic lists every address block that is not globally reachable
// unicast, from the IANA IPv4 and IPv6 Special-Purpose Address Registries
// plus multicast, the reserved space and the deprecated blocks. The first
// match names the class, so narrower blocks come before the blocks that
// contain them. Some blocks IANA marks globally reachable are refused all
// the same because no webhook receiver lives there: the anycast /32s of
// 192.0.0.0/24 (PCP, TURN), and inside 2001::/23 the anycast, AMT, AS112,
// ORCHIDv2 and DRIP blocks. The transition forms that carry an IPv4
// address are refused outright (IPv4-compatible ::/96, NAT64 local-use
// 64:ff9b:1::/48, 6to4 2002::/16, Teredo 2001::/32), except NAT64's
// well-known prefix 64:ff9b::/96, which AddrClass judges by its embedded
// IPv4 address (an IPv6-only host with DNS64 reaches every IPv4 receiver
// through it), as it does IPv4-mapped ::ffff:0:0/96.
var nonPublic = []addrRange{ //nolint:gochecknoglobals // a constant table
	// IPv4 (RFC 6890 and its updates).
	{netip.MustParsePrefix("0.0.0.0/8"), "this network (0.0.0.0/8)"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private (10.0.0.0/8)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space, CGNAT (100.64.0.0/10)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback (127.0.0.0/8)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (169.254.0.0/16)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private (172.16.0.0/12)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments (192.0.0.0/24)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation, TEST-NET-1 (192.0.2.0/24)"},
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay anycast, deprecated (192.88.99.0/24)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private (192.168.0.0/16)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking (198.18.0.0/15)"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation, TEST-NET-2 (198.51.100.0/24)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation, TEST-NET-3 (203.0.113.0/24)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast (224.0.0.0/4)"},
	{netip.MustParsePrefix("255.255.255.255/32"), "limited broadcast (255.255.255.255)"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (240.0.0.0/4)"},
	// IPv6 (RFC 6890 and its updates).
	{netip.MustParsePrefix("::/128"), "unspecified (::)"},
	{netip.MustParsePrefix("::1/128"), "loopback (::1)"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible, deprecated (::/96)"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "NAT64 local-use (64:ff9b:1::/48)"},
	{netip.MustParsePrefix("100::/64"), "discard-only (100::/64)"},
	{netip.MustParsePrefix("100:0:0:1::/64"), "dummy prefix (100:0:0:1::/64)"},
	{netip.MustParsePrefix("2001::/32"), "Teredo (2001::/32)"},
	{netip.MustParsePrefix("2001:2::/48"), "benchmarking (2001:2::/48)"},
	{netip.MustParsePrefix("2001:10::/28"), "ORCHID, deprecated (2001:10::/28)"},
	{netip.MustParsePrefix("2001:20::/28"), "ORCHIDv2 (2001:20::/28)"},
	{netip.MustParsePrefix("2001::/23"), "IETF protocol assignments (2001::/23)"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation (2001:db8::/32)"},
	{netip.MustParsePrefix("2002::/16"), "6to4 (2002::/16)"},
	{netip.MustParsePrefix("3fff::/20"), "documentation (3fff::/20)"},
	{netip.MustParsePrefix("5f00::/16"), "SRv6 SIDs (5f00::/16)"},
	{netip.MustParsePrefix("fc00::/7"), "unique local (fc00::/7)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local (fe80::/10)"},
	{netip.MustParsePrefix("fec0::/10"), "site-local, deprecated (fec0::/10)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast (ff00::/8)"},
}

// Blocks AddrClass treats specially.
var (
	// globalUnicast6 is the only IPv6 space allocated for global unicast;
	// anything outside it (after the mapped and NAT64 forms) is refused.
	globalUnicast6 = netip.MustParsePrefix("2000::/3") //nolint:gochecknoglobals // constant prefix
	// nat64 is NAT64's well-known prefix (RFC 6052): the last 32 bits are
	// the IPv4 address the translator reaches.
	nat64 = netip.MustParsePrefix("64:ff9b::/96") //nolint:gochecknoglobals // constant prefix
)

// AddrClass names the class of ip when a webhook may not reach it (SSRF
// guard), and returns "" for a public unicast address. IPv4-mapped IPv6
// addresses and NAT64 well-known-prefix addresses are judged by the IPv4
// address they carry; a scoped address (with an IPv6 zone) is never public.
// It is a pure function: it resolves nothing.
func AddrClass(ip netip.Addr) string {
	if !ip.IsValid() {
		return "invalid address"
	}
	if ip.Zone() != "" {
		return "scoped address (IPv6 zone " + ip.Zone() + ")"
	}
	if ip.Is4In6() {
		if c := AddrClass(ip.Unmap()); c != "" {
			return "IPv4-mapped " + c
		}
		return ""
	}
	if nat64.Contains(ip) {
		b := ip.As16()
		if c := AddrClass(netip.AddrFrom4([4]byte(b[12:16]))); c != "" {
			return "NAT64 (64:ff9b::/96) of " + c
		}
		return ""
	}
	for _, r := range nonPublic {
		if r.prefix.Contains(ip) {
			return r.class
		}
	}
	if ip.Is6() && !globalUnicast6.Contains(ip) {
		return "not global unicast (outside 2000::/3)"
	}
	return ""
}

// IsPublicAddr reports whether ip is a public unicast address: AddrClass
// finds no class of address a webhook may not reach.
func IsPublicAddr(ip netip.Addr) bool { return AddrClass(ip) == "" }

// NewDialContext returns a DialContext that refuses non-public addresses
// unless allowPrivate. The check runs on the resolved IP at connect time, so
// a DNS answer that changes between validation and delivery (rebinding)
// cannot reach a private address.
func NewDialContext(allowPrivate bool, timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("parse dialed address %s: %w", address, err)
			}
			if class := AddrClass(ap.Addr()); class != "" {
				return fmt.Errorf("dial %s (%s): %w", address, class, ErrPrivateTarget)
			}
			return nil
		}
	}
	return d.DialContext
}

// Resolver resolves a host name to its addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// PublicHostFunc returns the subscription service's target check
// (subscription.ServiceConfig.PublicHostFunc): true when every address of
// host is public, false when one is not, an error when host does not
// resolve.
func PublicHostFunc(resolver Resolver) func(ctx context.Context, host string) (bool, error) {
	return func(ctx context.Context, host string) (bool, error) {
		err := CheckTarget(ctx, resolver, host)
		if errors.Is(err, ErrPrivateTarget) {
			return false, nil
		}
		return err == nil, err
	}
}

// CheckTarget resolves host and reports ErrPrivateTarget when any of its
// addresses is not public (AddrClass, the same classification the dialer
// applies at connect time). The API calls it when a subscription is
// written; the dialer checks again at delivery.
func CheckTarget(ctx context.Context, resolver Resolver, host string) error {
	if ip, err := netip.ParseAddr(host); err == nil {
		if class := AddrClass(ip); class != "" {
			return fmt.Errorf("%s is %s: %w", host, class, ErrPrivateTarget)
		}
		return nil
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", host, err)
	}
	for _, a := range addrs {
		if class := AddrClass(a); class != "" {
			return fmt.Errorf("%s resolves to %s, %s: %w", host, a, class, ErrPrivateTarget)
		}
	}
	return nil
}
