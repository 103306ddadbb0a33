package stream

import (
	"log/slog"
	"sync"
)

// BufferDefault is how many events a client's channel holds before the
// client counts as slow: room for two full tailer pages. 1024 pointers are
// 8 KiB per idle client, so 1,000 idle clients cost about 8 MiB of buffers.
const BufferDefault = 1024

// HubConfig configures a Hub.
type HubConfig struct {
	// Buffer is the capacity of each client's channel. Default 1024.
	Buffer int
	// Logger receives a warning for each client dropped as slow.
	Logger *slog.Logger
}

// Hub fans status events out to the connected stream clients, after
// river's Client.Subscribe: each client gets a buffered channel and a
// cancel function. Publish never blocks: a client whose buffer is full is
// dropped (its channel closed) and resumes from its last event id by
// replaying from the store. Events are shared between clients and must not
// be modified once published.
//
// The hub also keeps the frontier: the highest id published so far. The
// Tailer publishes in ascending id order, so a client that subscribes and
// then reads the frontier F receives on its channel every event above F;
// what is at or below F it replays from the store (see Replay).
//
// A Hub is safe for concurrent use.
type Hub struct {
	buffer int
	logger *slog.Logger
	wake   chan struct{}

	mu       sync.Mutex
	clients  map[*client]struct{}
	frontier string
	closed   bool
	// held counts the open streams of each owner (Hold).
	held map[string]int
}

type client struct {
	ch    chan *Event
	match func(*Event) bool
}

// NewHub returns a Hub.
func NewHub(cfg HubConfig) *Hub {
	if cfg.Buffer <= 0 {
		cfg.Buffer = BufferDefault
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Hub{
		buffer:  cfg.Buffer,
		logger:  cfg.Logger.With("component", "stream_hub"),
		wake:    make(chan struct{}, 1),
		clients: make(map[*client]struct{}),
		held:    make(map[string]int),
	}
}

// Hold counts one more open stream of owner (a key or token) on this hub,
// unless owner already holds limit of them (limit ≤ 0: no limit): then ok
// is false. release gives the stream back; it is idempotent. The hub is
// one per instance, so the count is per instance.
func (h *Hub) Hold(owner string, limit int) (release func(), ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if limit > 0 && h.held[owner] >= limit {
		return func() {}, false
	}
	h.held[owner]++
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.held[owner]--; h.held[owner] <= 0 {
				delete(h.held, owner)
			}
		})
	}, true
}

// Held returns how many streams owner holds open on this hub.
func (h *Hub) Held(owner string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held[owner]
}

// Subscribe registers a client receiving the published events for which
// match returns true (every event when match is nil). The channel is
// closed when the client is dropped as slow, when the hub closes, or by
// cancel; cancel is idempotent and must be called when the client leaves.
func (h *Hub) Subscribe(match func(*Event) bool) (<-chan *Event, func()) {
	c := &client{ch: make(chan *Event, h.buffer), match: match}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		close(c.ch)
		return c.ch, func() {}
	}
	h.clients[c] = struct{}{}
	return c.ch, func() { h.drop(c) }
}

// drop removes a client and closes its channel unless already done.
func (h *Hub) drop(c *client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.clients[c]; ok {
		delete(h.clients, c)
		close(c.ch)
	}
}

// Publish sends events, in the given order, to every matching client and
// advances the frontier to the highest id among them. It never blocks.
func (h *Hub) Publish(events []*Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	slow := 0
	for _, e := range events {
		if e.ID > h.frontier {
			h.frontier = e.ID
		}
		for c := range h.clients {
			if c.match != nil && !c.match(e) {
				continue
			}
			select {
			case c.ch <- e:
			default:
				// Never block the publisher for one client: drop it; it
				// resumes from its last id.
				delete(h.clients, c)
				close(c.ch)
				slow++
			}
		}
	}
	if slow > 0 {
		h.logger.Warn("dropped slow stream clients", "clients", slow)
	}
}

// Frontier returns the highest id published so far, or the tailer's
// starting point before its first publication.
func (h *Hub) Frontier() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.frontier
}

// setFrontier sets the starting frontier; the tailer calls it once at
// start, before publishing.
func (h *Hub) setFrontier(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if id > h.frontier {
		h.frontier = id
	}
}

// advanceIfIdle moves the frontier up to id when no client is connected,
// atomically with respect to Subscribe, and reports whether it did: a
// client subscribing concurrently either sees the new frontier or keeps the
// tailer reading.
func (h *Hub) advanceIfIdle(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.clients) > 0 {
		return false
	}
	if id > h.frontier {
		h.frontier = id
	}
	return true
}

// Clients returns the number of connected clients.
func (h *Hub) Clients() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.clients)
}

// Notify tells the tailer that status events were just written locally, so
// it reads the store now instead of at its next poll. It never blocks.
func (h *Hub) Notify() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Close closes every client's channel and refuses new clients.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for c := range h.clients {
		delete(h.clients, c)
		close(c.ch)
	}
}
