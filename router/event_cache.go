package router

import (
	"context"
	"fmt"

	"github.com/dgraph-io/ristretto/v2"

	"github.com/hooklane/hooklane/event"
)

// Sizing of the event cache: events are immutable once stored, so the jobs
// of one event (one per matching subscription, and their retries) read it
// from the store once while it is cached. The budget is in bytes of event
// data, so a few large events cannot hold more memory than many small ones.
const (
	eventCacheMaxBytes = 32 << 20
	eventCacheCounters = 100_000
	eventCacheBuffer   = 64
	// eventOverhead is the cost of an event beyond its data: ids, attributes.
	eventOverhead = 512
)

// eventCache is a read-through cache of stored events in front of the
// store. It is safe for concurrent use.
type eventCache struct {
	store Store
	cache *ristretto.Cache[string, *event.Event]
}

func newEventCache(st Store) *eventCache {
	c, err := ristretto.NewCache(&ristretto.Config[string, *event.Event]{
		NumCounters: eventCacheCounters, MaxCost: eventCacheMaxBytes, BufferItems: eventCacheBuffer,
		IgnoreInternalCost: true,
	})
	if err != nil {
		// Only an invalid constant configuration makes ristretto fail.
		panic(fmt.Sprintf("router: create event cache: %v", err))
	}
	return &eventCache{store: st, cache: c}
}

// get returns the stored event with id, from the cache or the store. The
// result is shared: callers must not modify it.
func (c *eventCache) get(ctx context.Context, id string) (*event.Event, error) {
	if ev, ok := c.cache.Get(id); ok {
		return ev, nil
	}
	ev, err := c.store.EventGetByID(ctx, id)
	if err != nil {
		return nil, err
	}
	c.put(ev)
	return ev, nil
}

// put caches ev, an event as stored (one a job's message carried).
func (c *eventCache) put(ev *event.Event) {
	c.cache.Set(ev.ID, ev, int64(eventOverhead+len(ev.Event.Data)+len(ev.Event.DataBase64)))
}

func (c *eventCache) close() { c.cache.Close() }
