package stream

import (
	"context"
	"time"
)

// Store is the storage port for status events.
type Store interface {
	// StatusEventInsertMany stores status events; an id already stored is
	// skipped.
	StatusEventInsertMany(ctx context.Context, events []Event) error
	// StatusEventListAfter returns up to p.Limit events in ascending id,
	// with id > p.AfterID (when set) and Time ≥ p.Since (when set).
	StatusEventListAfter(ctx context.Context, p *ListAfterParams) ([]Event, error)
	// StatusEventListBySubject returns the events of one job or event, in
	// ascending id.
	StatusEventListBySubject(ctx context.Context, subject string) ([]Event, error)
	// StatusEventDeleteBefore deletes up to limit events older than before
	// and returns how many it deleted.
	StatusEventDeleteBefore(ctx context.Context, before time.Time, limit int) (int, error)
}

// ListAfterParams are the arguments of StatusEventListAfter.
type ListAfterParams struct {
	AfterID string
	Since   time.Time
	Limit   int
}
