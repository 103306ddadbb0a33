package tenant

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/subscription"
	"github.com/hooklane/hooklane/subscription/replay"
)

// Kind is the kind of object whose owner Owners looks up.
type Kind int

// The kinds of owned objects (API.md §11).
const (
	// KindSubscription is a subscription: its clientId.
	KindSubscription Kind = iota + 1
	// KindJob is a dispatch job: its subscription's client (a TASK job's
	// is the platform's).
	KindJob
	// KindEvent is an event: its clientid extension.
	KindEvent
	// KindReplay is a replay: its subscription's client.
	KindReplay
)

// String names the kind as the API's problems do.
func (k Kind) String() string {
	switch k {
	case KindSubscription:
		return "subscription"
	case KindJob:
		return "dispatch job"
	case KindEvent:
		return "event"
	case KindReplay:
		return "replay"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// OwnerSubscriptions reads subscriptions: the matching cache (which every
// instance keeps whole, and which reads the store for one it lacks).
type OwnerSubscriptions interface {
	Get(ctx context.Context, id string) (*subscription.Subscription, error)
	Index(ctx context.Context) (*subscription.Index, error)
}

// OwnersConfig are the reads Owners works from.
type OwnersConfig struct {
	Events interface {
		EventGetByID(ctx context.Context, id string) (*event.Event, error)
	}
	Jobs interface {
		JobGetByID(ctx context.Context, id string) (*dispatch.Job, error)
	}
	Subscriptions OwnerSubscriptions
	// Replays reads replays; nil: no replay belongs to a client.
	Replays interface {
		Get(ctx context.Context, id string) (*replay.Replay, error)
	}
}

// Owners tells which client owns an object: the lookups behind the client
// scope of API.md §11 — the route guard's 404 for another client's object,
// the stream's clients filter, the job list narrowed to a client.
type Owners struct {
	cfg OwnersConfig
}

// NewOwners returns Owners reading through cfg.
func NewOwners(cfg OwnersConfig) *Owners { return &Owners{cfg: cfg} }

// Owner returns the client that owns the object id of kind k: "" for an
// object of the platform (anchor level). found is false when the object
// does not exist.
func (o *Owners) Owner(ctx context.Context, k Kind, id string) (owner string, found bool, err error) {
	switch k {
	case KindSubscription:
		return o.subscriptionOwner(ctx, id)
	case KindJob:
		j, err := o.cfg.Jobs.JobGetByID(ctx, id)
		if err != nil {
			return missing(err)
		}
		if j.SubscriptionID == "" {
			return "", true, nil
		}
		owner, _, err := o.subscriptionOwner(ctx, j.SubscriptionID)
		// A job whose subscription is gone is the platform's.
		return owner, true, err
	case KindEvent:
		ev, err := o.cfg.Events.EventGetByID(ctx, id)
		if err != nil {
			return missing(err)
		}
		return ev.Event.Ext(subscription.ClientExtension), true, nil
	case KindReplay:
		if o.cfg.Replays == nil {
			return "", false, nil
		}
		r, err := o.cfg.Replays.Get(ctx, id)
		if err != nil {
			return missing(err)
		}
		return deref(r.ClientID), true, nil
	}
	return "", false, fmt.Errorf("owner of %s %s: unknown kind", k, id)
}

// subscriptionOwner is Owner for a subscription.
func (o *Owners) subscriptionOwner(ctx context.Context, id string) (string, bool, error) {
	sub, err := o.cfg.Subscriptions.Get(ctx, id)
	if err != nil {
		return missing(err)
	}
	return deref(sub.ClientID), true, nil
}

// SubscriptionIDs returns the ids of the subscriptions of clientID, sorted.
func (o *Owners) SubscriptionIDs(ctx context.Context, clientID string) ([]string, error) {
	ix, err := o.cfg.Subscriptions.Index(ctx)
	if err != nil {
		return nil, fmt.Errorf("read subscription index: %w", err)
	}
	ids := []string{}
	for _, sub := range ix.Subscriptions() {
		if sub.ClientID != nil && *sub.ClientID == clientID {
			ids = append(ids, sub.ID)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// OwnCodes returns the codes among codes that name a subscription of
// clientID, each once, in the index's order.
func (o *Owners) OwnCodes(ctx context.Context, clientID string, codes []string) ([]string, error) {
	ix, err := o.cfg.Subscriptions.Index(ctx)
	if err != nil {
		return nil, fmt.Errorf("read subscription index: %w", err)
	}
	out := []string{}
	for _, sub := range ix.Subscriptions() {
		if sub.ClientID != nil && *sub.ClientID == clientID && slices.Contains(codes, sub.Code) && !slices.Contains(out, sub.Code) {
			out = append(out, sub.Code)
		}
	}
	return out, nil
}

// missing turns a read's error into Owner's answer: not found for
// store.ErrNotFound, the error otherwise.
func missing(err error) (string, bool, error) {
	if errors.Is(err, store.ErrNotFound) {
		return "", false, nil
	}
	return "", false, err
}

// deref returns *p, or "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
