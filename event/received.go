package event

import "time"

// ListReceivedParams page through the event log in (ReceivedAt, ID) order,
// the order a replay (API.md §13) walks it in. Adapters keep an index on
// (receivedAt, id) for it.
type ListReceivedParams struct {
	// Since is the inclusive lower bound of ReceivedAt, used while the
	// position below is zero.
	Since time.Time
	// AfterReceivedAt and AfterID are the position of the last event read:
	// the page starts strictly after it. Zero for the first page.
	AfterReceivedAt time.Time
	AfterID         string
	// Until is the exclusive upper bound of ReceivedAt. Required.
	Until time.Time
	// Limit is the page size (0: 500).
	Limit int
}
