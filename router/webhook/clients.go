package webhook

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/hooklane/hooklane/destination/endpoint"
)

// Bounds of the per-TLS-configuration clients.
const (
	// TLSClientsDefault is how many distinct TLS configurations keep an
	// HTTP transport (and its connections) by default.
	TLSClientsDefault = 256
	// TLSClientIdleDefault is how long a TLS configuration's transport is
	// kept unused by default.
	TLSClientIdleDefault = 10 * time.Minute
	// clientSweepInterval is how often, at most, a lookup looks for
	// transports unused for longer than the idle bound.
	clientSweepInterval = time.Minute
	// tlsMaxIdleConns bounds the idle connections of one TLS
	// configuration's transport, across its hosts.
	tlsMaxIdleConns = 64
)

// clients holds the HTTP clients deliveries use: the shared one for
// targets without a TLS configuration, and one per distinct TLS
// configuration (a client certificate, a private CA), keyed by its hash.
// Each has its own transport, so its connections are reused across
// deliveries and never mixed with another configuration's. The set is
// bounded: past max the least recently used is dropped, and one unused for
// idle is dropped at the next sweep; a dropped transport's idle
// connections are closed (a request still running on it finishes, and its
// connection is closed by the transport's idle timeout).
//
// It is safe for concurrent use.
type clients struct {
	base    *http.Client
	newFunc func(tlsCfg *tls.Config) *http.Client
	idle    time.Duration
	nowFunc func() time.Time

	byKey *lru.Cache[string, *tlsClient]
	// mu serialises the creation of clients, so concurrent deliveries of
	// a new configuration share one transport.
	mu        sync.Mutex
	lastSweep atomic.Int64 // unix nanoseconds
}

// tlsClient is the client of one TLS configuration.
type tlsClient struct {
	client   *http.Client
	lastUsed atomic.Int64 // unix nanoseconds
}

func newClients(base *http.Client, newFunc func(*tls.Config) *http.Client, maxClients int, idle time.Duration, nowFunc func() time.Time) *clients {
	byKey, err := lru.NewWithEvict(maxClients, func(_ string, c *tlsClient) { c.client.CloseIdleConnections() })
	if err != nil {
		// Only a size below 1 makes it fail; New never passes one.
		panic(fmt.Sprintf("webhook: create TLS client cache: %v", err))
	}
	return &clients{base: base, newFunc: newFunc, idle: idle, nowFunc: nowFunc, byKey: byKey}
}

// get returns the client of a TLS configuration; the shared one for nil.
// A configuration that does not parse (it was checked when written, so the
// store holds something else) is an error.
func (c *clients) get(t *endpoint.TLS) (*http.Client, error) {
	now := c.nowFunc().UnixNano()
	c.sweep(now) // on every lookup, so an unused client goes even when no TLS delivery runs
	if t == nil {
		return c.base, nil
	}
	key := t.Key()
	if tc, ok := c.byKey.Get(key); ok {
		tc.lastUsed.Store(now)
		return tc.client, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if tc, ok := c.byKey.Get(key); ok {
		tc.lastUsed.Store(now)
		return tc.client, nil
	}
	cfg, err := t.Config()
	if err != nil {
		return nil, fmt.Errorf("tls configuration: %w", err)
	}
	tc := &tlsClient{client: c.newFunc(cfg)}
	tc.lastUsed.Store(now)
	c.byKey.Add(key, tc)
	return tc.client, nil
}

// sweep drops the clients unused for longer than idle, at most once per
// clientSweepInterval. The cache's order is recency of use, so it stops at
// the first one used recently enough.
func (c *clients) sweep(now int64) {
	last := c.lastSweep.Load()
	if now-last < int64(clientSweepInterval) || !c.lastSweep.CompareAndSwap(last, now) {
		return
	}
	for {
		key, tc, ok := c.byKey.GetOldest()
		if !ok || now-tc.lastUsed.Load() <= int64(c.idle) {
			return
		}
		c.byKey.Remove(key)
	}
}

// len returns how many TLS configurations have a client.
func (c *clients) len() int { return c.byKey.Len() }

// close drops every client, closing their idle connections.
func (c *clients) close() {
	c.base.CloseIdleConnections()
	c.byKey.Purge()
}

// newHTTPClient returns a client that dials through dial, with tlsCfg when
// not nil, never follows a redirect and uses no proxy (a proxy would
// bypass the SSRF guard on the resolved address).
func newHTTPClient(dial func(ctx context.Context, network, addr string) (net.Conn, error), tlsCfg *tls.Config, maxIdle, maxIdlePerHost int) *http.Client {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dial,
		TLSClientConfig:       tlsCfg,
		MaxIdleConns:          maxIdle,
		MaxIdleConnsPerHost:   maxIdlePerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
