package sqlitestore

import (
	"context"
	"database/sql"
	"sync"
)

// readStmts are the prepared statements of the point reads on the hot
// path (a job, its event, its subscription, by id). Preparing a statement
// costs about as much as running one of these reads, and the driver does
// not cache: each read used to parse and plan its SQL again. A *sql.Stmt
// on the read pool is prepared on each read connection once, when first
// used there.
type readStmts struct {
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// get returns the statement of query, preparing it on first use. Only
// constant queries come here (no IN lists of varying length), so the map
// stays as small as the number of call sites.
func (r *readStmts) get(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st, ok := r.stmts[query]; ok {
		return st, nil
	}
	st, err := db.PrepareContext(ctx, query) //nolint:sqlclosecheck // cached for the store's life; close() closes it
	if err != nil {
		return nil, err //nolint:wrapcheck // the caller's Scan reports it, wrapped there
	}
	if r.stmts == nil {
		r.stmts = make(map[string]*sql.Stmt)
	}
	r.stmts[query] = st
	return st, nil
}

// close closes every statement.
func (r *readStmts) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.stmts {
		_ = st.Close()
	}
	r.stmts = nil
}

// queryRow runs a constant single-row query on the read pool through its
// prepared statement.
func (s *Store) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := s.reads.get(ctx, s.rdb, query) //nolint:sqlclosecheck // a cached statement, closed with the store
	if err != nil {
		// Let Scan report the error, as *sql.DB does.
		return s.rdb.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}
