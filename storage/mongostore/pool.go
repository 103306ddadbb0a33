package mongostore

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/hooklane/hooklane/dispatch/pool"
	"github.com/hooklane/hooklane/store"
)

// poolDoc is a dispatch.Pool as stored.
type poolDoc struct {
	ID            string    `bson:"_id"`
	Code          string    `bson:"code"`
	Name          string    `bson:"name"`
	RatePerSecond *float64  `bson:"ratePerSecond"`
	Burst         int       `bson:"burst"`
	Concurrency   int       `bson:"concurrency"`
	CreatedAt     time.Time `bson:"createdAt"`
	UpdatedAt     time.Time `bson:"updatedAt"`
}

func toPoolDoc(p *pool.Pool) *poolDoc {
	return &poolDoc{
		ID:            p.ID,
		Code:          p.Code,
		Name:          p.Name,
		RatePerSecond: p.RatePerSecond,
		Burst:         p.Burst,
		Concurrency:   p.Concurrency,
		CreatedAt:     ms(p.CreatedAt),
		UpdatedAt:     ms(p.UpdatedAt),
	}
}

func (d *poolDoc) asDomain() *pool.Pool {
	return &pool.Pool{
		ID:            d.ID,
		Code:          d.Code,
		Name:          d.Name,
		RatePerSecond: d.RatePerSecond,
		Burst:         d.Burst,
		Concurrency:   d.Concurrency,
		CreatedAt:     utc(d.CreatedAt),
		UpdatedAt:     utc(d.UpdatedAt),
	}
}

// PoolInsert stores a new pool; store.ErrConflict when its code (or id)
// exists.
func (s *Store) PoolInsert(ctx context.Context, p *pool.Pool) error {
	if err := s.check(); err != nil {
		return err
	}
	if _, err := s.pools.InsertOne(ctx, toPoolDoc(p)); err != nil {
		return fmt.Errorf("insert pool %s: %w", p.Code, translate(ctx, err))
	}
	return nil
}

// PoolGetByID returns one pool; store.ErrNotFound when there is none.
func (s *Store) PoolGetByID(ctx context.Context, id string) (*pool.Pool, error) {
	p, err := s.poolFind(ctx, bson.D{{Key: "_id", Value: id}})
	if err != nil {
		return nil, fmt.Errorf("get pool %s: %w", id, err)
	}
	return p, nil
}

// PoolGetByCode returns one pool by code; store.ErrNotFound when there is
// none.
func (s *Store) PoolGetByCode(ctx context.Context, code string) (*pool.Pool, error) {
	p, err := s.poolFind(ctx, bson.D{{Key: "code", Value: code}})
	if err != nil {
		return nil, fmt.Errorf("get pool by code %s: %w", code, err)
	}
	return p, nil
}

func (s *Store) poolFind(ctx context.Context, filter bson.D) (*pool.Pool, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var doc poolDoc
	if err := s.pools.FindOne(ctx, filter).Decode(&doc); err != nil {
		return nil, translate(ctx, err)
	}
	return doc.asDomain(), nil
}

// PoolList returns every pool, ordered by code.
func (s *Store) PoolList(ctx context.Context) ([]*pool.Pool, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	docs, err := findAll[poolDoc](ctx, s.pools, bson.D{}, options.Find().SetSort(bson.D{{Key: "code", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("list pools: %w", err)
	}
	out := make([]*pool.Pool, len(docs))
	for i := range docs {
		out[i] = docs[i].asDomain()
	}
	return out, nil
}

// PoolUpdate replaces a stored pool, found by id; store.ErrConflict when its
// new code belongs to another pool, store.ErrNotFound when it is gone.
func (s *Store) PoolUpdate(ctx context.Context, p *pool.Pool) error {
	if err := s.check(); err != nil {
		return err
	}
	res, err := s.pools.ReplaceOne(ctx, bson.D{{Key: "_id", Value: p.ID}}, toPoolDoc(p))
	if err != nil {
		return fmt.Errorf("update pool %s: %w", p.ID, translate(ctx, err))
	}
	if res.MatchedCount == 0 {
		return fmt.Errorf("update pool %s: %w", p.ID, store.ErrNotFound)
	}
	return nil
}

// PoolDelete removes a pool; store.ErrNotFound when there is none.
func (s *Store) PoolDelete(ctx context.Context, id string) error {
	if err := s.check(); err != nil {
		return err
	}
	res, err := s.pools.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}})
	if err != nil {
		return fmt.Errorf("delete pool %s: %w", id, translate(ctx, err))
	}
	if res.DeletedCount == 0 {
		return fmt.Errorf("delete pool %s: %w", id, store.ErrNotFound)
	}
	return nil
}
