package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hooklane/hooklane/dispatch/pool"
	"github.com/hooklane/hooklane/store"
)

// poolDocument is the stored form of a pool, without the API's MarshalJSON.
type poolDocument pool.Pool

func poolDoc(p *pool.Pool) ([]byte, error) {
	c := *p
	c.CreatedAt = msUTC(c.CreatedAt)
	c.UpdatedAt = msUTC(c.UpdatedAt)
	b, err := json.Marshal((*poolDocument)(&c))
	if err != nil {
		return nil, fmt.Errorf("encode pool %s: %w", p.ID, err)
	}
	return b, nil
}

func scanPool(r rowScanner) (*pool.Pool, error) {
	var doc []byte
	if err := r.Scan(&doc); err != nil {
		return nil, err
	}
	p := &pool.Pool{}
	if err := json.Unmarshal(doc, (*poolDocument)(p)); err != nil {
		return nil, fmt.Errorf("decode pool: %w", err)
	}
	return p, nil
}

// PoolInsert stores a new pool; store.ErrConflict when its id or code is
// stored.
func (s *Store) PoolInsert(ctx context.Context, p *pool.Pool) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	doc, err := poolDoc(p)
	if err != nil {
		return err
	}
	id, code := p.ID, p.Code
	err = s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO pools (id, code, doc) VALUES (?, ?, ?)`, id, code, doc)
		return err
	})
	if err != nil {
		return fmt.Errorf("insert pool %s: %w", code, s.translate(err))
	}
	return nil
}

// PoolGetByID returns one pool.
func (s *Store) PoolGetByID(ctx context.Context, id string) (*pool.Pool, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	p, err := scanPool(s.queryRow(ctx, `SELECT doc FROM pools WHERE id = ?`, id))
	if err != nil {
		return nil, fmt.Errorf("get pool %s: %w", id, s.translate(err))
	}
	return p, nil
}

// PoolGetByCode returns one pool by code.
func (s *Store) PoolGetByCode(ctx context.Context, code string) (*pool.Pool, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	p, err := scanPool(s.rdb.QueryRowContext(ctx, `SELECT doc FROM pools WHERE code = ?`, code))
	if err != nil {
		return nil, fmt.Errorf("get pool by code %s: %w", code, s.translate(err))
	}
	return p, nil
}

// PoolList returns every pool ordered by code.
func (s *Store) PoolList(ctx context.Context) ([]*pool.Pool, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT doc FROM pools ORDER BY code`)
	if err != nil {
		return nil, fmt.Errorf("list pools: %w", s.translate(err))
	}
	defer rows.Close()
	var pools []*pool.Pool
	for rows.Next() {
		p, err := scanPool(rows)
		if err != nil {
			return nil, fmt.Errorf("list pools: %w", s.translate(err))
		}
		pools = append(pools, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list pools: %w", s.translate(err))
	}
	return pools, nil
}

// PoolUpdate replaces a stored pool; store.ErrConflict when its new code
// belongs to another pool.
func (s *Store) PoolUpdate(ctx context.Context, p *pool.Pool) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	doc, err := poolDoc(p)
	if err != nil {
		return err
	}
	id, code := p.ID, p.Code
	err = s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		return execOne(ctx, tx, `UPDATE pools SET code = ?, doc = ? WHERE id = ?`, code, doc, id)
	})
	if err != nil {
		return fmt.Errorf("update pool %s: %w", id, s.translate(err))
	}
	return nil
}

// PoolDelete removes a pool.
func (s *Store) PoolDelete(ctx context.Context, id string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		return execOne(ctx, tx, `DELETE FROM pools WHERE id = ?`, id)
	})
	if err != nil {
		return fmt.Errorf("delete pool %s: %w", id, s.translate(err))
	}
	return nil
}

// execOne runs a statement that must change exactly one row:
// store.ErrNotFound when it changed none.
func execOne(ctx context.Context, tx *writeTx, query string, args ...any) error {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err //nolint:wrapcheck // wrapped by the caller with its action
	}
	if n == 0 {
		return store.ErrNotFound
	}
	return nil
}

// missingOr tells apart why a conditional write matched no row:
// store.ErrNotFound when no row of table has keyColumn = key, otherwise
// (the row is there, its condition did not hold). table and keyColumn are
// the adapter's own names, never input.
func missingOr(ctx context.Context, tx *writeTx, table, keyColumn, key string, otherwise error) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM `+table+` WHERE `+keyColumn+` = ?`, key).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.ErrNotFound
	case err != nil:
		return err //nolint:wrapcheck // the callers wrap it with their action
	}
	return otherwise
}

// bumpGeneration grows the named generation counter.
func bumpGeneration(ctx context.Context, tx *writeTx, name string) error {
	if _, err := tx.ExecContext(ctx, `UPDATE generations SET value = value + 1 WHERE name = ?`, name); err != nil {
		return fmt.Errorf("bump %s generation: %w", name, err)
	}
	return nil
}

// generation reads the named generation counter.
func (s *Store) generation(ctx context.Context, name string) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	var g int64
	if err := s.queryRow(ctx, `SELECT value FROM generations WHERE name = ?`, name).Scan(&g); err != nil {
		return 0, fmt.Errorf("read %s generation: %w", name, s.translate(err))
	}
	return g, nil
}
