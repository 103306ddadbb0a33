package ingest

import (
	"context"
	"time"

	"github.com/hooklane/hooklane/cloudevent"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/stream"
)

// StoredEvent is an accepted event as the gateway keeps it.
type StoredEvent struct {
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

// Store is the storage port for events.
type Store interface {
	// EventIngest stores events with their jobs and status events. For each
	// item: when an event with the same DedupKey is stored, nothing of the
	// item is written and its result is a duplicate naming the stored
	// event; otherwise the event, its jobs and its status events are
	// written, and the event is marked fanned out. Results match p.Items.
	// Adapters that cannot write an item atomically write the event first
	// and mark it fanned out last, so a crash leaves it for fan-out
	// recovery.
	EventIngest(ctx context.Context, p *EventIngestParams) ([]EventIngestResult, error)
	// EventGetByID returns one event.
	EventGetByID(ctx context.Context, id string) (*StoredEvent, error)
	// EventList returns one page, newest first.
	EventList(ctx context.Context, p *EventListParams) (*EventPage, error)
	// EventListNotFannedOut returns up to p.Limit events received before
	// p.ReceivedBefore that are not marked fanned out, oldest first.
	EventListNotFannedOut(ctx context.Context, p *EventListNotFannedOutParams) ([]*StoredEvent, error)
	// EventMarkFannedOut marks events fanned out at `at`.
	EventMarkFannedOut(ctx context.Context, ids []string, at time.Time) error
	// EventDeleteBefore deletes up to limit events received before `before`
	// and returns how many it deleted.
	EventDeleteBefore(ctx context.Context, before time.Time, limit int) (int, error)
}

// EventIngestParams are the arguments of EventIngest.
type EventIngestParams struct {
	Items []EventIngestItem
}

// EventIngestItem is one event with what its acceptance creates.
type EventIngestItem struct {
	Event        *StoredEvent
	Jobs         []*dispatch.Job
	StatusEvents []stream.Event
}

// EventIngestResult is the outcome of one item.
type EventIngestResult struct {
	// Duplicate is true when an event with the same key was stored.
	Duplicate bool
	// ExistingID is the stored event's id when Duplicate.
	ExistingID string
}

// EventListParams filters and pages EventList. Empty fields do not filter.
type EventListParams struct {
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

// EventPage is one page of events.
type EventPage struct {
	Events     []*StoredEvent
	NextCursor string
}

// EventListNotFannedOutParams are the arguments of EventListNotFannedOut.
type EventListNotFannedOutParams struct {
	ReceivedBefore time.Time
	Limit          int
}
