package destination

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Bounds of the clients (API.md §15: one client per distinct destination
// configuration per instance, reused, closed when unused).
const (
	// MaxClientsDefault is how many destination configurations keep a
	// client (and its connections: one per broker the client talks to)
	// at once; past it the least recently used is closed.
	MaxClientsDefault = 256
	// IdleTimeoutDefault is how long a client is kept unused before it is
	// closed.
	IdleTimeoutDefault = 5 * time.Minute
	// ConnectTimeoutDefault bounds opening a client: dial, TLS,
	// handshake and authentication.
	ConnectTimeoutDefault = 10 * time.Second
	// PublishTimeoutDefault bounds one publish, its wait for the broker's
	// acknowledgement included (the caller's context, carrying the
	// subscription's timeoutSeconds, may end it sooner).
	PublishTimeoutDefault = 30 * time.Second
	// sweepIntervalMax is the longest wait between two looks for idle
	// clients.
	sweepIntervalMax = time.Minute
)

// ClientsConfig configures [Clients]. Zero values take the defaults.
type ClientsConfig struct {
	// MaxClients bounds the open clients; default MaxClientsDefault.
	MaxClients int
	// IdleTimeout closes a client unused for that long; default
	// IdleTimeoutDefault.
	IdleTimeout time.Duration
	// ConnectTimeout bounds opening a client; default
	// ConnectTimeoutDefault.
	ConnectTimeout time.Duration
	// PublishTimeout bounds one publish; default PublishTimeoutDefault.
	PublishTimeout time.Duration
	// Dial opens every broker connection. The wiring passes the guarded
	// dialer that refuses private addresses unless allowed; default a
	// plain net.Dialer bounded by ConnectTimeout.
	Dial DialFunc
	// Logger logs closes that fail; default slog.Default().
	Logger *slog.Logger
	// NowFunc is the clock; default time.Now.
	NowFunc func() time.Time
}

// Clients publishes through one [Publisher] per distinct destination
// configuration ([Destination.Key]: secrets included, so a changed
// password gets a new client), opened on first use and shared by every
// concurrent delivery to it. A client is closed when it has been unused
// for IdleTimeout (by [Clients.Run]), when MaxClients newer ones push it
// out, or when it says it is no longer alive (the next publish opens a
// new one); a client still publishing is closed when its last publish
// returns. It is safe for concurrent use.
type Clients struct {
	cfg ClientsConfig

	mu      sync.Mutex
	entries map[string]*entry
	closed  bool
}

// entry is one configuration's client. Its fields after ready are
// guarded by Clients.mu; pub and err are written once, before ready is
// closed.
type entry struct {
	ready    chan struct{}
	pub      Publisher
	err      error
	refs     int
	lastUsed time.Time
	gone     bool // out of the map: closed when refs reaches 0
	secrets  []string
}

// NewClients returns an empty set of clients.
func NewClients(cfg ClientsConfig) *Clients {
	cfg.MaxClients = cmp.Or(cfg.MaxClients, MaxClientsDefault)
	cfg.IdleTimeout = cmp.Or(cfg.IdleTimeout, IdleTimeoutDefault)
	cfg.ConnectTimeout = cmp.Or(cfg.ConnectTimeout, ConnectTimeoutDefault)
	cfg.PublishTimeout = cmp.Or(cfg.PublishTimeout, PublishTimeoutDefault)
	if cfg.Dial == nil {
		cfg.Dial = (&net.Dialer{Timeout: cfg.ConnectTimeout}).DialContext
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	return &Clients{cfg: cfg, entries: map[string]*entry{}}
}

// Publish publishes m to d through d's client, opening it if needed, and
// returns the broker's answer. A failure is a *PublishError (its text free
// of d's secrets), or ErrClosed after Close; it is bounded by
// PublishTimeout, and by ctx.
func (c *Clients) Publish(ctx context.Context, d *Destination, m *Message) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.PublishTimeout)
	defer cancel()
	e, err := c.acquire(ctx, d)
	if errors.Is(err, ErrClosed) {
		return "", err
	}
	if err != nil {
		return "", c.failure(d, "connect", err)
	}
	defer c.release(e)
	answer, err := e.pub.Publish(ctx, m)
	if err != nil {
		return "", c.failure(d, "publish", err)
	}
	return answer, nil
}

// acquire returns d's client, opened, with a reference taken.
func (c *Clients) acquire(ctx context.Context, d *Destination) (*entry, error) {
	key := d.Key()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	var done []*entry
	e := c.entries[key]
	if e != nil && isReady(e) && (e.err != nil || !e.pub.Alive()) {
		done = c.removeLocked(key, e, done)
		e = nil
	}
	if e == nil {
		e = &entry{ready: make(chan struct{}), secrets: d.secrets}
		c.entries[key] = e
		done = c.evictLocked(key, done)
		go c.open(ctx, key, d, e)
	}
	e.refs++
	c.mu.Unlock()
	c.closeAll(done)
	select {
	case <-e.ready:
		if e.err != nil {
			c.release(e)
			return nil, e.err
		}
		return e, nil
	case <-ctx.Done():
		c.release(e)
		return nil, fmt.Errorf("wait for connection: %w", ctx.Err())
	}
}

// open opens e's publisher, bounded by ConnectTimeout and not by the
// context of the delivery that asked first (others may share it).
func (c *Clients) open(ctx context.Context, key string, d *Destination, e *entry) {
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.ConnectTimeout)
	defer cancel()
	pub, err := d.Type.Open(octx, d.Config, &OpenOptions{Dial: c.cfg.Dial, ConnectTimeout: c.cfg.ConnectTimeout, Logger: c.cfg.Logger})
	c.mu.Lock()
	e.pub, e.err = pub, err
	e.lastUsed = c.cfg.NowFunc()
	if err != nil && c.entries[key] == e {
		delete(c.entries, key)
	}
	closeNow := err == nil && (c.closed || e.gone) && e.refs == 0
	close(e.ready)
	c.mu.Unlock()
	if closeNow {
		c.closePublisher(e)
	}
}

// release drops a reference; the last one out of a removed entry closes
// its publisher.
func (c *Clients) release(e *entry) {
	c.mu.Lock()
	e.refs--
	e.lastUsed = c.cfg.NowFunc()
	closeNow := e.gone && e.refs == 0 && isReady(e) && e.err == nil
	c.mu.Unlock()
	if closeNow {
		c.closePublisher(e)
	}
}

// removeLocked takes e out of the map and appends it to done when nobody
// uses it (the caller closes it after unlocking); else its last user
// closes it on release, or its open when it finishes.
func (c *Clients) removeLocked(key string, e *entry, done []*entry) []*entry {
	if c.entries[key] == e {
		delete(c.entries, key)
	}
	e.gone = true
	if e.refs == 0 && isReady(e) && e.err == nil {
		done = append(done, e)
	}
	return done
}

// evictLocked removes the least recently used entries (but keep) while
// there are more than MaxClients.
func (c *Clients) evictLocked(keep string, done []*entry) []*entry {
	for len(c.entries) > c.cfg.MaxClients {
		var oldestKey string
		var oldest *entry
		for k, e := range c.entries {
			if k != keep && (oldest == nil || e.lastUsed.Before(oldest.lastUsed)) {
				oldestKey, oldest = k, e
			}
		}
		if oldest == nil {
			break
		}
		done = c.removeLocked(oldestKey, oldest, done)
	}
	return done
}

// Sweep closes the clients unused for longer than IdleTimeout, and those
// no longer alive that nobody uses.
func (c *Clients) Sweep() {
	now := c.cfg.NowFunc()
	var done []*entry
	c.mu.Lock()
	for key, e := range c.entries {
		if e.refs > 0 || !isReady(e) {
			continue
		}
		if now.Sub(e.lastUsed) > c.cfg.IdleTimeout || e.err != nil || !e.pub.Alive() {
			done = c.removeLocked(key, e, done)
		}
	}
	c.mu.Unlock()
	c.closeAll(done)
}

// Run sweeps idle clients every quarter of IdleTimeout (at most a minute
// apart) until ctx ends, then returns nil. Without Run, idle clients are
// closed only by Close, the bound, or a failure.
func (c *Clients) Run(ctx context.Context) error {
	t := time.NewTicker(min(c.cfg.IdleTimeout/4, sweepIntervalMax))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			c.Sweep()
		}
	}
}

// Len returns how many clients are open or opening.
func (c *Clients) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// Close closes every client (one still publishing when its publish
// returns) and makes Publish fail with ErrClosed.
func (c *Clients) Close() {
	var done []*entry
	c.mu.Lock()
	c.closed = true
	for key, e := range c.entries {
		done = c.removeLocked(key, e, done)
	}
	c.mu.Unlock()
	c.closeAll(done)
}

// closeAll closes the publishers of entries.
func (c *Clients) closeAll(entries []*entry) {
	for _, e := range entries {
		c.closePublisher(e)
	}
}

// closePublisher closes an entry's publisher, logging a failure (its
// text redacted).
func (c *Clients) closePublisher(e *entry) {
	if err := e.pub.Close(); err != nil {
		c.cfg.Logger.Warn("close destination client", "error", redact(err.Error(), e.secrets))
	}
}

// failure turns err into a *PublishError with d's secrets redacted.
func (c *Clients) failure(d *Destination, verb string, err error) error {
	return &PublishError{
		Type:      d.Type.Name(),
		Text:      verb + ": " + redact(err.Error(), d.secrets),
		Permanent: IsPermanent(err),
		Timeout:   errors.Is(err, context.DeadlineExceeded) || isTimeout(err),
	}
}

// isReady reports whether e's open has finished.
func isReady(e *entry) bool {
	select {
	case <-e.ready:
		return true
	default:
		return false
	}
}

func isTimeout(err error) bool {
	ne, ok := errors.AsType[net.Error](err)
	return ok && ne.Timeout()
}
