package mongostore

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"

	"github.com/hooklane/hooklane/store"
)

// translate turns a driver error into the store's sentinels, at the
// boundary: no document → store.ErrNotFound, duplicate key →
// store.ErrConflict, a disconnected client → store.ErrClosed, and an
// unreachable server (network error, server selection failure, timeout not
// caused by ctx, or a FerretDB server too busy to write) → an error wrapping
// both store.ErrUnavailable and the cause.
// Errors of ctx itself stay as they are, so a cancelled caller is not told
// the database is down.
func translate(ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, mongo.ErrNoDocuments):
		return store.ErrNotFound
	case mongo.IsDuplicateKeyError(err), ferretUniqueViolation(err):
		return fmt.Errorf("%w: %w", store.ErrConflict, err)
	case errors.Is(err, mongo.ErrClientDisconnected):
		return store.ErrClosed
	case ctx.Err() != nil:
		return fmt.Errorf("%w: %w", ctx.Err(), err)
	case unavailable(err), ferretBusy(err):
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
}

// unavailable reports whether err means the server could not be reached.
func unavailable(err error) bool {
	var sel topology.ServerSelectionError
	var conn topology.ConnectionError
	return mongo.IsNetworkError(err) || mongo.IsTimeout(err) ||
		errors.As(err, &sel) || errors.As(err, &conn)
}

// ferretUniqueViolation reports whether err is FerretDB's (v1, SQLite
// backend) answer to an update or replace that breaks a unique index: an
// InternalError carrying SQLite's message, where MongoDB answers
// DuplicateKey (11000). Inserts get 11000 from both.
func ferretUniqueViolation(err error) bool {
	var se mongo.ServerError
	return errors.As(err, &se) && se.HasErrorMessage("UNIQUE constraint failed")
}

// ferretBusy reports whether err is FerretDB's (v1, SQLite backend) refusal
// of a write while another connection holds the database's write lock
// (SQLITE_BUSY, as an InternalError). Nothing of the refused command's
// transaction was written; like an unreachable server, it is worth a retry,
// so callers get store.ErrUnavailable (503 with Retry-After at the API).
func ferretBusy(err error) bool {
	var se mongo.ServerError
	return errors.As(err, &se) && se.HasErrorMessage("(SQLITE_BUSY)")
}
