// Package replay sends stored history to a subscription (API.md §13). A
// replay is a durable, resumable background task: the Service records it,
// and a Worker on any instance claims it under a lease, pages through the
// stored events received in [Since, Until) in (receivedAt, id) order, matches
// each against the subscription as it is now (subscription.Acceptor: the
// code ingest matches with) and creates the jobs through the delivery
// core's verbs (dispatch.Lifecycle), with a checkpoint after every page.
//
// # Exactly once
//
// A replayed job's id is deterministic. Without Redeliver it is the id the
// event's live job for that subscription has (dispatch.NewEventJob), so an
// event that already has its job gets nothing, and a replay repeated, or
// resumed after a crash, creates nothing twice. With Redeliver it is derived
// from (event, subscription, replay), so each redelivering replay creates
// one new job per event, once, however often it is resumed.
//
// # Leases
//
// Only one instance works a replay at a time: a Worker takes a RUNNING
// replay whose lease is free or expired with a version-checked write that
// names it the owner, and renews the lease with every checkpoint. A Worker
// killed mid-page loses nothing: its lease expires, another Worker (or the
// restarted one) takes the replay over from the last checkpoint, and the
// pages it repeats create nothing twice (deterministic ids).
//
// # Back-pressure
//
// Jobs are created at most at Config.Rate per second, and the Worker waits
// while the subscription has more than Config.BacklogMax unfinished jobs
// (PENDING, QUEUED, IN_PROGRESS), so a replay of millions of events neither
// floods the queue nor starves live traffic.
//
// # Order
//
// A job's place in its message group is its event's id (dispatch.Job
// OrderKey), whoever created it. A replay walks its range oldest first and
// sends each page's jobs in event order, so in NEXT_ON_ERROR and
// BLOCK_ON_ERROR a group's replayed jobs are delivered in event order; a
// live job of the group (a newer event, so a later place) that reaches a
// router while a replayed job of the group is unfinished waits behind it by
// the order gate's rules. A live job delivered before the replay reached its
// group is not held back: the replayed jobs of that group then follow it.
package replay

import (
	"encoding/json"
	"time"

	"github.com/hooklane/hooklane/event/cloudevent"
)

// Status is a replay's state.
type Status string

// Replay statuses.
const (
	// StatusRunning is a replay not finished yet (working, or waiting for a
	// worker to take it over).
	StatusRunning Status = "RUNNING"
	// StatusCompleted is a replay that walked its whole range.
	StatusCompleted Status = "COMPLETED"
	// StatusFailed is a replay that cannot go on (its subscription was
	// deleted); Error says why.
	StatusFailed Status = "FAILED"
)

// Replay is one replay of stored events to a subscription.
type Replay struct {
	ID             string
	SubscriptionID string
	// Subscription is the subscription's code.
	Subscription string
	// ClientID is the subscription's client, nil for an anchor-level one.
	ClientID *string
	Status   Status
	// Since and Until bound the events' receivedAt: since inclusive, until
	// exclusive.
	Since, Until time.Time
	// EventTypes narrows the replay to these codes or patterns; empty for
	// every type the subscription binds.
	EventTypes []string
	// Redeliver creates a new job also for an event that has one already.
	Redeliver bool
	// Scanned counts the events read, Matched those that matched, Created
	// the jobs created.
	Scanned, Matched, Created int64
	// Error says why a FAILED replay stopped.
	Error       string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	CompletedAt *time.Time
	// AfterReceivedAt and AfterID are the checkpoint: the last event
	// handled. Zero before the first page.
	AfterReceivedAt time.Time
	AfterID         string
	// Owner is the worker holding the lease; LeaseExpiresAt when it ends.
	Owner          string
	LeaseExpiresAt *time.Time
	// Version counts the writes (optimistic locking, as dispatch.Job).
	Version int64
}

// replayJSON is the API form of a replay (API.md §13).
type replayJSON struct {
	ID             string   `json:"id"`
	Subscription   string   `json:"subscription"`
	SubscriptionID string   `json:"subscriptionId"`
	ClientID       *string  `json:"clientId"`
	Status         Status   `json:"status"`
	Since          string   `json:"since"`
	Until          string   `json:"until"`
	EventTypes     []string `json:"eventTypes"`
	Redeliver      bool     `json:"redeliver"`
	Scanned        int64    `json:"scanned"`
	Matched        int64    `json:"matched"`
	Created        int64    `json:"created"`
	Error          *string  `json:"error"`
	CreatedAt      string   `json:"createdAt"`
	UpdatedAt      string   `json:"updatedAt"`
	CompletedAt    *string  `json:"completedAt"`
	// Position is the receivedAt of the last event handled: the progress
	// through [since, until).
	Position *string `json:"position"`
}

// MarshalJSON renders the replay as the API shows it: the checkpoint, the
// lease and the version stay inside.
func (r *Replay) MarshalJSON() ([]byte, error) {
	out := replayJSON{
		ID: r.ID, Subscription: r.Subscription, SubscriptionID: r.SubscriptionID, ClientID: r.ClientID,
		Status: r.Status, Since: cloudevent.FormatTime(r.Since), Until: cloudevent.FormatTime(r.Until),
		EventTypes: r.EventTypes, Redeliver: r.Redeliver,
		Scanned: r.Scanned, Matched: r.Matched, Created: r.Created,
		CreatedAt: cloudevent.FormatTime(r.CreatedAt), UpdatedAt: cloudevent.FormatTime(r.UpdatedAt),
	}
	if out.EventTypes == nil {
		out.EventTypes = []string{}
	}
	if r.Error != "" {
		out.Error = &r.Error
	}
	if !r.AfterReceivedAt.IsZero() {
		s := cloudevent.FormatTime(r.AfterReceivedAt)
		out.Position = &s
	}
	if r.CompletedAt != nil {
		s := cloudevent.FormatTime(*r.CompletedAt)
		out.CompletedAt = &s
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err //nolint:wrapcheck // plain struct, cannot fail
	}
	return b, nil
}

// Leased reports whether a worker other than owner holds the replay's lease
// at now.
func (r *Replay) Leased(owner string, now time.Time) bool {
	return r.Owner != "" && r.Owner != owner && r.LeaseExpiresAt != nil && r.LeaseExpiresAt.After(now)
}
