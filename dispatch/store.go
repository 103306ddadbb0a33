package dispatch

import (
	"context"
	"time"

	"github.com/hooklane/hooklane/stream"
)

// Store is the storage port for dispatch jobs and pools. Adapters live in
// store/sqlitestore and store/mongostore and pass store/storetest.
//
// Errors: store.ErrNotFound for a missing record, store.ErrConflict for a
// uniqueness or version clash, store.ErrUnavailable when the database cannot
// be reached.
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
	// JobInsertMany stores jobs, and with them the status events describing
	// their creation. It is idempotent: a job whose id is already stored is
	// left as it is, and its status events are not written again.
	JobInsertMany(ctx context.Context, p *JobInsertManyParams) error
	// JobGetByID returns one job.
	JobGetByID(ctx context.Context, id string) (*Job, error)
	// JobGetMany returns the jobs with the given ids that exist, in no
	// particular order.
	JobGetMany(ctx context.Context, ids []string) ([]*Job, error)
	// JobListByEvent returns the jobs of one event, in no particular order.
	JobListByEvent(ctx context.Context, eventID string) ([]*Job, error)
	// JobList returns one page of jobs, newest (highest id) first.
	JobList(ctx context.Context, p *JobListParams) (*JobPage, error)
	// JobUpdate writes p.Job over the stored job when the stored version
	// equals p.Job.Version, then sets p.Job.Version to the new version
	// (old + 1); the status events are stored with the change, and
	// p.Outbox, when set, in the operational outbox in the same write
	// (OutboxStore: neither is stored when the version check fails). It returns
	// store.ErrConflict when the versions differ and store.ErrNotFound when
	// the job is gone.
	JobUpdate(ctx context.Context, p *JobUpdateParams) error
	// JobListDue returns up to p.Limit jobs of status p.Status that are due
	// at p.Now, oldest OrderKey first: PENDING jobs whose NextAttemptAt is
	// nil or ≤ Now; QUEUED jobs whose UpdatedAt ≤ Now; IN_PROGRESS jobs
	// whose LeaseExpiresAt ≤ Now. Optional filters narrow the set.
	JobListDue(ctx context.Context, p *JobListDueParams) ([]*Job, error)
	// JobListGroup returns up to p.Limit jobs of one message group and one
	// subscription, in ascending OrderKey, whose OrderKey is below
	// p.BeforeOrderKey (when set) and whose status is one of p.Statuses
	// (when set).
	JobListGroup(ctx context.Context, p *JobListGroupParams) ([]*Job, error)
	// JobDeleteFinishedBefore deletes up to p.Limit jobs whose status is
	// finished (COMPLETED, ERROR, CANCELLED) and whose UpdatedAt is before
	// p.Before; it returns how many it deleted.
	JobDeleteFinishedBefore(ctx context.Context, p *JobDeleteFinishedBeforeParams) (int, error)
}

// JobInsertManyParams are the arguments of JobInsertMany.
type JobInsertManyParams struct {
	Jobs   []*Job
	Events []stream.Event
}

// JobUpdateParams are the arguments of JobUpdate.
type JobUpdateParams struct {
	// Job is the new state; Job.Version is the version it was read at.
	Job    *Job
	Events []stream.Event
	// Outbox are status events stored with the change as the operational
	// outbox, atomically with it (see CircuitUpdateParams.Outbox): the
	// dispatch.discarded event of a job moved to ERROR, when
	// CircuitPolicy.DurableEvents is set. The relay reads the job for what
	// the event does not carry (its subscription id).
	Outbox []stream.Event
}

// JobListParams filters and pages JobList. Empty fields do not filter.
type JobListParams struct {
	Status         Status
	SubscriptionID string
	// SubscriptionIDs, when non-nil, keeps only jobs of these subscriptions
	// (none when empty): the jobs of one client's subscriptions (API.md §11).
	SubscriptionIDs []string
	// Subscription is a subscription code.
	Subscription string
	EventID      string
	EventType    string
	MessageGroup string
	// Since and Until bound CreatedAt: since inclusive, until exclusive.
	Since, Until time.Time
	// Limit is the page size, 1 to 500.
	Limit int
	// Cursor is the NextCursor of the previous page; empty for the first.
	Cursor string
}

// JobPage is one page of a job list.
type JobPage struct {
	Jobs []*Job
	// NextCursor is empty when there is no further page.
	NextCursor string
}

// JobListDueParams are the arguments of JobListDue.
type JobListDueParams struct {
	Status Status
	Now    time.Time
	Limit  int
	// SubscriptionID narrows to one subscription when set.
	SubscriptionID string
	// Delivery narrows to push or pull jobs when set.
	Delivery Delivery
}

// JobListGroupParams are the arguments of JobListGroup.
type JobListGroupParams struct {
	SubscriptionID string
	MessageGroup   string
	BeforeOrderKey string
	Statuses       []Status
	Limit          int
}

// JobDeleteFinishedBeforeParams are the arguments of JobDeleteFinishedBefore.
type JobDeleteFinishedBeforeParams struct {
	Before time.Time
	Limit  int
}
