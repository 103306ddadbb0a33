// Package store holds the sentinel errors shared by every storage port and
// adapter. It imports nothing, so domain packages and adapters can both depend
// on it without an import cycle.
//
// Adapters translate their driver's errors into these sentinels at the
// boundary; callers branch on them with errors.Is.
package store

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound is returned when the addressed record does not exist.
	ErrNotFound = errors.New("not found")

	// ErrConflict is returned when a write breaks a uniqueness rule or an
	// optimistic-concurrency check (the record changed since it was read).
	ErrConflict = errors.New("conflict")

	// ErrStale is the ErrConflict of an optimistic-concurrency check: the
	// record changed since the caller read it (errors.Is matches both).
	// The caller reads it again and reapplies its change.
	ErrStale = fmt.Errorf("%w: changed since it was read", ErrConflict)

	// ErrClosed is returned by a store that has been closed.
	ErrClosed = errors.New("store closed")

	// ErrUnavailable is returned when the backing database cannot be reached.
	// Callers answer 503 with Retry-After rather than 500.
	ErrUnavailable = errors.New("store unavailable")
)
