package dispatch

import (
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/stream"
)

// The write that accepts events: each event is stored with the jobs its
// acceptance creates and their status events, in one store call
// (Store.EventIngest, through Lifecycle.Ingest), so an event answered 201
// has its jobs. Jobs are created through the lifecycle only: this verb for
// ingest, Insert for fan-out recovery, replays and TASK jobs.

// EventIngestParams are the arguments of EventIngest.
type EventIngestParams struct {
	Items []EventIngestItem
}

// EventIngestItem is one event with what its acceptance creates.
type EventIngestItem struct {
	Event        *event.Event
	Jobs         []*Job
	StatusEvents []stream.Event
}

// EventIngestResult is the outcome of one item.
type EventIngestResult struct {
	// Duplicate is true when an event with the same key was stored.
	Duplicate bool
	// ExistingID is the stored event's id when Duplicate.
	ExistingID string
}
