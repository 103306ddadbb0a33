package api

import (
	"context"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
)

// Store is what the handlers read from the store themselves: the stored
// events, jobs and status history they show, and the subscription a job
// belongs to. Every write goes through a service (Services, Jobs).
type Store interface {
	EventGetByID(ctx context.Context, id string) (*event.Event, error)
	EventList(ctx context.Context, p *event.ListParams) (*event.Page, error)
	JobGetByID(ctx context.Context, id string) (*dispatch.Job, error)
	JobListByEvent(ctx context.Context, eventID string) ([]*dispatch.Job, error)
	JobList(ctx context.Context, p *dispatch.JobListParams) (*dispatch.JobPage, error)
	SubscriptionGetByID(ctx context.Context, id string) (*subscription.Subscription, error)
	stream.Reader
	StatusEventListBySubject(ctx context.Context, subject string) ([]stream.Event, error)
	Ping(ctx context.Context) error
}

// Jobs is what the API needs of the job lifecycle (*dispatch.Lifecycle):
// the moves operators ask for and the creation of TASK jobs.
type Jobs interface {
	Create(ctx context.Context, jobs []*dispatch.Job) error
	Retry(ctx context.Context, id string) (*dispatch.Job, error)
	RetryMany(ctx context.Context, p *dispatch.JobListParams) (int, error)
	Cancel(ctx context.Context, id, reason string) (*dispatch.Job, error)
	CancelSubscription(ctx context.Context, subscriptionID, reason string) (int, error)
	ReleaseSubscription(ctx context.Context, subscriptionID string) (int, error)
	ResetCircuit(ctx context.Context, subscriptionID, code string) error
}

// Pinger reports whether a dependency is reachable.
type Pinger interface {
	Ping(ctx context.Context) error
}
