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

// cgnat is the carrier-grade NAT range (RFC 6598), not covered by
// netip.Addr.IsPrivate.
var cgnat = netip.MustParsePrefix("100.64.0.0/10") //nolint:gochecknoglobals // constant prefix

// IsPublicAddr reports whether ip is a public unicast address: not
// loopback, private, link-local, CGNAT, multicast, unspecified or otherwise
// reserved.
func IsPublicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid(), ip.IsLoopback(), ip.IsPrivate(), ip.IsLinkLocalUnicast(),
		ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast(), ip.IsMulticast(),
		ip.IsUnspecified(), cgnat.Contains(ip):
		return false
	}
	if ip.Is4() {
		b := ip.As4()
		// 0.0.0.0/8, 192.0.0.0/24, 198.18.0.0/15 benchmarking, 240.0.0.0/4 reserved.
		if b[0] == 0 || (b[0] == 192 && b[1] == 0 && b[2] == 0) || (b[0] == 198 && (b[1] == 18 || b[1] == 19)) || b[0] >= 240 {
			return false
		}
	}
	return true
}

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
			if !IsPublicAddr(ap.Addr()) {
				return fmt.Errorf("dial %s: %w", address, ErrPrivateTarget)
			}
			return nil
		}
	}
	return d.DialContext
}

// CheckTarget resolves host and reports ErrPrivateTarget when any of its
// addresses is not public. The API calls it when a subscription is written;
// the dialer checks again at delivery.
func CheckTarget(ctx context.Context, resolver *net.Resolver, host string) error {
	if ip, err := netip.ParseAddr(host); err == nil {
		if !IsPublicAddr(ip) {
			return ErrPrivateTarget
		}
		return nil
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", host, err)
	}
	for _, a := range addrs {
		if !IsPublicAddr(a) {
			return ErrPrivateTarget
		}
	}
	return nil
}
