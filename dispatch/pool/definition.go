package pool

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hooklane/hooklane/event/cloudevent"
)

// DefaultPoolCode is the code of the pool every delivery without a pool runs
// in. It cannot be deleted.
const DefaultPoolCode = "default"

// DefaultPoolConcurrency is the default pool's concurrency when first
// created.
const DefaultPoolConcurrency = 64

// Pool is a dispatch pool: a budget of concurrent requests and a start rate
// that the deliveries of its subscriptions share (API.md §4).
type Pool struct {
	ID   string `json:"id"`
	Code string `json:"code"`
	Name string `json:"name"`
	// RatePerSecond is the token-bucket refill rate; nil means unlimited.
	RatePerSecond *float64 `json:"ratePerSecond"`
	// Burst is the token-bucket size.
	Burst int `json:"burst"`
	// Concurrency is the most requests in flight at once.
	Concurrency int       `json:"concurrency"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// Store is the storage port for dispatch pools.
type Store interface {
	// PoolInsert stores a new pool; store.ErrConflict when its code exists.
	PoolInsert(ctx context.Context, p *Pool) error
	// PoolGetByID returns one pool.
	PoolGetByID(ctx context.Context, id string) (*Pool, error)
	// PoolGetByCode returns one pool by code.
	PoolGetByCode(ctx context.Context, code string) (*Pool, error)
	// PoolList returns every pool, ordered by code.
	PoolList(ctx context.Context) ([]*Pool, error)
	// PoolUpdate replaces a stored pool, found by id; store.ErrConflict when
	// its new code belongs to another pool.
	PoolUpdate(ctx context.Context, p *Pool) error
	// PoolDelete removes a pool.
	PoolDelete(ctx context.Context, id string) error
}

// MarshalJSON renders the pool with timestamps in the gateway's format.
func (p Pool) MarshalJSON() ([]byte, error) {
	type plain Pool
	return json.Marshal(struct { //nolint:wrapcheck // plain data
		plain
		CreatedAt cloudevent.Timestamp `json:"createdAt"`
		UpdatedAt cloudevent.Timestamp `json:"updatedAt"`
	}{plain: plain(p), CreatedAt: cloudevent.Timestamp(p.CreatedAt), UpdatedAt: cloudevent.Timestamp(p.UpdatedAt)})
}
