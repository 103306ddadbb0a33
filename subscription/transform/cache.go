package transform

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"sync"
)

// CacheSizeDefault is how many compiled programs a [Cache] keeps by default.
const CacheSizeDefault = 1024

// CacheKey names one version of one subscription's transformation.
type CacheKey struct {
	// SubscriptionID is the subscription's id ("" for code that belongs to
	// none, such as the test endpoint's).
	SubscriptionID string
	// Version is the subscription's version, or [SourceVersion] of the code.
	Version string
}

// SourceVersion is a version for code that has none: the hex SHA-256 of src.
func SourceVersion(src string) string {
	sum := sha256.Sum256([]byte(src))
	return hex.EncodeToString(sum[:])
}

// Cache keeps compiled programs, least recently used out first, so a
// delivery compiles a subscription's code once per version. It is safe for
// concurrent use. Compile errors are not kept: the API refuses such code, so
// it does not reach deliveries.
type Cache struct {
	mu      sync.Mutex
	size    int
	order   *list.List // of *cacheEntry, most recent first
	entries map[CacheKey]*list.Element
}

type cacheEntry struct {
	key  CacheKey
	src  string
	prog *Program
}

// NewCache returns a Cache of at most size programs (default
// [CacheSizeDefault] when size ≤ 0).
func NewCache(size int) *Cache {
	if size <= 0 {
		size = CacheSizeDefault
	}
	return &Cache{size: size, order: list.New(), entries: make(map[CacheKey]*list.Element)}
}

// Program returns the compiled src for key, compiling it on a miss. An
// entry whose source differs from src (a version reused for other code) is
// compiled anew. A compile error is a [*CompileError].
func (c *Cache) Program(key CacheKey, src string) (*Program, error) {
	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		e := el.Value.(*cacheEntry) //nolint:forcetypeassert // the list holds only *cacheEntry
		if e.src == src {
			c.order.MoveToFront(el)
			c.mu.Unlock()
			return e.prog, nil
		}
	}
	c.mu.Unlock()

	// Compiled outside the lock: two deliveries missing together both
	// compile, and the second store wins; neither waits on the other.
	prog, err := Compile(src)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.order.Remove(el)
	}
	c.entries[key] = c.order.PushFront(&cacheEntry{key: key, src: src, prog: prog})
	for c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*cacheEntry).key) //nolint:forcetypeassert // the list holds only *cacheEntry
	}
	return prog, nil
}

// Len is how many programs the cache holds.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
