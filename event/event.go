// Package event is the log of accepted events: the event record as the
// gateway keeps it and the store port to read it. It is a leaf: ingest
// writes the log, and the router, pull delivery, the pollers and replay read
// it, without importing one another.
package event

import (
	"context"
	"time"

	"github.com/hooklane/hooklane/event/cloudevent"
)

// Event is an accepted event as the gateway keeps it.
type Event struct {
	// ID is the gateway's id (a ULID), not the producer's CloudEvents id.
	ID         string
	ReceivedAt time.Time
	// DedupKey is source + "\x00" + (deduplicationid or id).
	DedupKey string
	// Event is the CloudEvent as stored (time filled in when absent).
	Event cloudevent.Event
	// SchemaVersion is the resolved schema version, "" when the type has
	// none.
	SchemaVersion string
	// FannedOutAt is when its dispatch jobs were stored; nil until then.
	FannedOutAt *time.Time
}

// Store is the read side of the event log, with the two writes that do not
// create events (the fan-out marker and retention). Adapters live in
// store/sqlitestore and store/mongostore and pass store/storetest.
type Store interface {
	// EventGetByID returns one event, store.ErrNotFound when it is gone.
	EventGetByID(ctx context.Context, id string) (*Event, error)
	// EventList returns one page, newest first.
	EventList(ctx context.Context, p *ListParams) (*Page, error)
	// EventListNotFannedOut returns up to p.Limit events received before
	// p.ReceivedBefore that are not marked fanned out, oldest first.
	EventListNotFannedOut(ctx context.Context, p *ListNotFannedOutParams) ([]*Event, error)
	// EventMarkFannedOut marks events fanned out at `at`.
	EventMarkFannedOut(ctx context.Context, ids []string, at time.Time) error
	// EventDeleteBefore deletes up to limit events received before `before`
	// and returns how many it deleted.
	EventDeleteBefore(ctx context.Context, before time.Time, limit int) (int, error)
}

// ListParams filters and pages EventList. Empty fields do not filter.
type ListParams struct {
	Type         string
	Source       string
	Subject      string
	MessageGroup string
	// Ext filters on extension values (string equality).
	Ext map[string]string
	// Since and Until bound ReceivedAt: since inclusive, until exclusive.
	Since, Until time.Time
	Limit        int
	Cursor       string
}

// Page is one page of events.
type Page struct {
	Events     []*Event
	NextCursor string
}

// ListNotFannedOutParams are the arguments of EventListNotFannedOut.
type ListNotFannedOutParams struct {
	ReceivedBefore time.Time
	Limit          int
}
