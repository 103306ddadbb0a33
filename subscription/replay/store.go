package replay

import (
	"context"
	"time"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/stream"
)

// Store is the storage port of replays, with the reads a replay makes of
// the event log and the jobs. Adapters live in store/sqlitestore and
// store/mongostore and pass store/storetest.
//
// Errors: store.ErrNotFound for a missing replay, store.ErrConflict for an
// id stored already or a version clash.
type Store interface {
	// ReplayInsert stores a new replay and sets its Version to 1;
	// store.ErrConflict when its id is stored.
	ReplayInsert(ctx context.Context, r *Replay) error
	// ReplayGetByID returns one replay.
	ReplayGetByID(ctx context.Context, id string) (*Replay, error)
	// ReplayList returns one page of replays, newest (highest id) first.
	ReplayList(ctx context.Context, p *ListParams) (*Page, error)
	// ReplayListClaimable returns up to p.Limit RUNNING replays whose lease
	// is free (no owner) or expired at p.Now (LeaseExpiresAt ≤ Now), oldest
	// id first.
	ReplayListClaimable(ctx context.Context, p *ListClaimableParams) ([]*Replay, error)
	// ReplayUpdate writes r over the stored replay when the stored version
	// equals r.Version, then sets r.Version to the new version (old + 1).
	// It returns store.ErrConflict when the versions differ and
	// store.ErrNotFound when the replay is gone.
	ReplayUpdate(ctx context.Context, r *Replay) error
	// EventListReceived returns up to p.Limit stored events in ascending
	// (ReceivedAt, ID) after the position (p.AfterReceivedAt, p.AfterID)
	// (from p.Since when the position is zero) and received before p.Until.
	EventListReceived(ctx context.Context, p *event.ListReceivedParams) ([]*event.Event, error)
	// JobGetMany returns the jobs with the given ids that exist.
	JobGetMany(ctx context.Context, ids []string) ([]*dispatch.Job, error)
	// JobCountUnfinished counts the PENDING, QUEUED and IN_PROGRESS jobs of
	// one subscription, stopping at p.Limit (it returns at most p.Limit).
	JobCountUnfinished(ctx context.Context, p *JobCountUnfinishedParams) (int, error)
	// StatusEventInsertMany stores status events (replay.started,
	// replay.completed).
	StatusEventInsertMany(ctx context.Context, events []stream.Event) error
}

// ListParams filters and pages ReplayList.
type ListParams struct {
	// SubscriptionID narrows to one subscription when set.
	SubscriptionID string
	// Limit is the page size, 1 to 500 (0: 50).
	Limit int
	// Cursor is the NextCursor of the previous page; empty for the first.
	Cursor string
}

// Page is one page of replays.
type Page struct {
	Replays []*Replay
	// NextCursor is empty when there is no further page.
	NextCursor string
}

// ListClaimableParams are the arguments of ReplayListClaimable.
type ListClaimableParams struct {
	Now   time.Time
	Limit int
}

// JobCountUnfinishedParams are the arguments of JobCountUnfinished.
type JobCountUnfinishedParams struct {
	SubscriptionID string
	// Limit bounds the count (and the work of counting); at least 1.
	Limit int
}
