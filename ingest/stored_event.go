package ingest

import (
	"context"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/stream"
)

// Store is the storage port for events: the event log's reads and the
// ingest write.
type Store interface {
	event.Store
	// EventIngest stores events with their jobs and status events. For each
	// item: when an event with the same DedupKey is stored, nothing of the
	// item is written and its result is a duplicate naming the stored
	// event; otherwise the event, its jobs and its status events are
	// written, and the event is marked fanned out. Results match p.Items.
	// Adapters that cannot write an item atomically write the event first
	// and mark it fanned out last, so a crash leaves it for fan-out
	// recovery.
	EventIngest(ctx context.Context, p *EventIngestParams) ([]EventIngestResult, error)
}

// EventIngestParams are the arguments of EventIngest.
type EventIngestParams struct {
	Items []EventIngestItem
}

// EventIngestItem is one event with what its acceptance creates.
type EventIngestItem struct {
	Event        *event.Event
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
