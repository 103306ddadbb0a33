package router

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/subscription"
)

// Transport delivers one attempt of a job to its destination and says what
// came of it. The signed HTTP webhook (package webhook) is one; a new
// destination type (a queue, a stream) is another package implementing it.
// Deliver must honour ctx and the job's timeout, and report every failure
// in the outcome (it has no error of its own): a failure no retry can fix
// marked with dispatch.Permanent, a destination's minimum wait with
// dispatch.RetryAfter, nothing sent at all with Attempted false. It is
// called concurrently.
type Transport interface {
	Deliver(ctx context.Context, d *Delivery) dispatch.Outcome
}

// Delivery is one attempt to deliver a job, with what the router loaded
// for it.
type Delivery struct {
	// Job is the claimed job; its TargetURL and Headers are the
	// subscription's current ones.
	Job *dispatch.Job
	// Event is the job's event; nil for a TASK job.
	Event *event.Event
	// Subscription is the job's subscription as it is now; nil for a TASK
	// job.
	Subscription *subscription.Subscription
	// Attempt is the attempt number (1-based).
	Attempt int
}

// Transports routes each delivery to the Transport registered for the
// scheme of its job's target URL ("http", "https", or a destination type's
// own, such as "sqs"). A target whose scheme has no transport is a
// permanent failure with nothing sent.
type Transports map[string]Transport

// Deliver delivers through the transport of d's target scheme.
func (ts Transports) Deliver(ctx context.Context, d *Delivery) dispatch.Outcome {
	u, err := url.Parse(d.Job.TargetURL)
	if err != nil {
		return dispatch.Outcome{Err: dispatch.Permanent(fmt.Errorf("target is not a URL: %w", err))}
	}
	t, ok := ts[strings.ToLower(u.Scheme)]
	if !ok {
		return dispatch.Outcome{Err: dispatch.Permanent(fmt.Errorf("no transport for target scheme %q", u.Scheme))}
	}
	return t.Deliver(ctx, d)
}
