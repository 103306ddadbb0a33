package dispatch

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/stream"
)

// CircuitState is the state of a subscription's circuit (API.md §12).
type CircuitState string

// Circuit states.
const (
	// CircuitClosed lets deliveries run.
	CircuitClosed CircuitState = "CLOSED"
	// CircuitOpen makes no attempt to the target: jobs that come due wait
	// PENDING until the circuit's NextProbeAt.
	CircuitOpen CircuitState = "OPEN"
	// CircuitHalfOpen lets exactly one job through, the probe.
	CircuitHalfOpen CircuitState = "HALF_OPEN"
)

// Circuit breaker defaults.
const (
	// CircuitCooldownDefault is the first wait of an open circuit before
	// its probe.
	CircuitCooldownDefault = 30 * time.Second
	// CircuitMaxCooldownDefault caps the cooldown, which doubles after each
	// failed probe.
	CircuitMaxCooldownDefault = 10 * time.Minute
)

// Circuit is the circuit breaker of one push subscription, shared by every
// instance through the store and written only by the lifecycle verbs
// (circuit_lifecycle.go), version-checked like a job.
//
// The machine (API.md §12):
//
//	CLOSED    ──► OPEN       Failures consecutive retryable failures
//	OPEN      ──► HALF_OPEN  NextProbeAt passed, a job takes the probe slot
//	HALF_OPEN ──► CLOSED     the probe succeeds (waiting jobs released)
//	HALF_OPEN ──► OPEN       the probe fails: cooldown doubled (≤ MaxCooldown)
//	any       ──► CLOSED     a success, or the subscription resumed
//
// The stored State is OPEN from the opening until a job takes the probe
// slot (a version-checked write: of racing routers exactly one wins); an
// OPEN circuit whose NextProbeAt has passed shows as HALF_OPEN (see View).
// A 4xx that ends a job in ERROR (a Permanent failure) neither counts nor
// resets ConsecutiveFailures; it frees a probe slot it held.
type Circuit struct {
	SubscriptionID string
	State          CircuitState
	// ConsecutiveFailures counts the retryable failed attempts since the
	// last success.
	ConsecutiveFailures int
	// OpenedAt is when the circuit last opened from CLOSED; nil when
	// CLOSED.
	OpenedAt *time.Time
	// NextProbeAt is when an OPEN circuit lets its probe through; nil when
	// CLOSED.
	NextProbeAt *time.Time
	// Cooldown is the wait that set NextProbeAt; it doubles after each
	// failed probe.
	Cooldown time.Duration
	// ProbeJobID is the job holding the probe slot while HALF_OPEN.
	ProbeJobID string
	// ProbeUntil is when the probe slot is free again if its job never
	// reports (its router died): the end of the probe's claim.
	ProbeUntil *time.Time
	// FailingSince is the first failed attempt (of any kind) since the last
	// success: the start of the auto-disable clock. Nil after a success.
	FailingSince *time.Time
	UpdatedAt    time.Time
	// Version counts the writes of the circuit; 0 means none is stored.
	Version int64
}

// CircuitPolicy is the circuit breaking and auto-disable policy of every
// push subscription (API.md §12).
type CircuitPolicy struct {
	// Store holds the circuits. Nil turns circuits and auto-disable off.
	Store CircuitStore
	// Failures is how many consecutive failed attempts open a circuit; 0
	// never opens one (HOOKLANE_CIRCUIT_FAILURES).
	Failures int
	// Cooldown is the first wait of an open circuit before its probe.
	// Default CircuitCooldownDefault (HOOKLANE_CIRCUIT_COOLDOWN).
	Cooldown time.Duration
	// MaxCooldown caps the doubled cooldown. Default
	// CircuitMaxCooldownDefault.
	MaxCooldown time.Duration
	// AutoDisableAfter pauses a subscription whose every attempt failed for
	// this long; 0 never does (HOOKLANE_AUTO_DISABLE_AFTER).
	AutoDisableAfter time.Duration
	// CleanTTL is how long a read of a clean CLOSED circuit is trusted, so
	// that deliveries to a healthy endpoint read no circuit: a circuit
	// another instance opens holds this instance's deliveries within it.
	// Default CleanCircuitTTLDefault; negative reads the circuit on every
	// gate and every success.
	CleanTTL time.Duration
	// DurableEvents stores the status events of every circuit transition
	// and auto-disable a second time, as the Outbox of the write that
	// causes them, for a relay to ingest as operational events (package
	// ingest/operational): they survive a crash right after the write.
	DurableEvents bool
}

// CircuitStore is the storage port of the circuits. Adapters live in
// store/sqlitestore and store/mongostore and pass store/storetest.
type CircuitStore interface {
	// CircuitGet returns the circuit of a subscription; store.ErrNotFound
	// when none is stored (the circuit is CLOSED and clean).
	CircuitGet(ctx context.Context, subscriptionID string) (*Circuit, error)
	// CircuitGetMany returns the stored circuits of the given
	// subscriptions, in no particular order.
	CircuitGetMany(ctx context.Context, subscriptionIDs []string) ([]*Circuit, error)
	// CircuitListNotClosed returns up to limit circuits whose State is not
	// CLOSED, earliest OpenedAt first.
	CircuitListNotClosed(ctx context.Context, limit int) ([]*Circuit, error)
	// CircuitUpdate writes p.Circuit when the stored version equals
	// p.Circuit.Version — 0 meaning none is stored, so the circuit is
	// inserted — then sets p.Circuit.Version to the new version (old + 1);
	// the status events are stored with the change. It returns
	// store.ErrConflict when the versions differ.
	CircuitUpdate(ctx context.Context, p *CircuitUpdateParams) error
	// CircuitDelete removes a subscription's circuit; none stored is no
	// error.
	CircuitDelete(ctx context.Context, subscriptionID string) error
	// SubscriptionDisable moves an ACTIVE subscription to PAUSED with
	// p.Reason as its statusReason and p.At as its updatedAt, stores the
	// status events with the change and announces it like any subscription
	// write (its generation grows). It reports whether it changed the
	// subscription: false when it was not ACTIVE (nothing is written then).
	// store.ErrNotFound when the subscription is gone.
	SubscriptionDisable(ctx context.Context, p *SubscriptionDisableParams) (bool, error)
}

// OutboxStore is the storage port of the operational outbox: the status
// events CircuitUpdate and SubscriptionDisable stored as their Outbox,
// waiting for the relay that ingests them as operational events.
type OutboxStore interface {
	// OutboxList returns up to limit stored outbox events, oldest first.
	OutboxList(ctx context.Context, limit int) ([]stream.Event, error)
	// OutboxDelete removes the outbox events with the given ids; ids not
	// stored are no error.
	OutboxDelete(ctx context.Context, ids []string) error
}

// CircuitUpdateParams are the arguments of CircuitUpdate.
type CircuitUpdateParams struct {
	// Circuit is the new state; Circuit.Version is the version it was read
	// at (0: not stored yet).
	Circuit *Circuit
	Events  []stream.Event
	// Outbox are status events stored with the change, in the same
	// transaction (or document write), as the operational outbox: they
	// stay there until the relay deletes them (OutboxStore).
	Outbox []stream.Event
}

// SubscriptionDisableParams are the arguments of SubscriptionDisable.
type SubscriptionDisableParams struct {
	SubscriptionID string
	Reason         string
	At             time.Time
	Events         []stream.Event
	// Outbox are status events stored with the change as the operational
	// outbox (see CircuitUpdateParams.Outbox).
	Outbox []stream.Event
}

// closedCircuit returns the clean circuit of a subscription that has none
// stored.
func closedCircuit(subscriptionID string) *Circuit {
	return &Circuit{SubscriptionID: subscriptionID, State: CircuitClosed}
}

// clean reports whether a success would change nothing: CLOSED, no failure
// counted, no failure since the last success.
func (c *Circuit) clean() bool {
	return c.State == CircuitClosed && c.ConsecutiveFailures == 0 && c.FailingSince == nil
}

// Effective returns the state as API.md §12 names it at now: an OPEN
// circuit whose NextProbeAt has passed is HALF_OPEN (its probe may go).
func (c *Circuit) Effective(now time.Time) CircuitState {
	if c.State == CircuitOpen && c.NextProbeAt != nil && !now.Before(*c.NextProbeAt) {
		return CircuitHalfOpen
	}
	return c.State
}

// probeHeld reports whether a job other than jobID holds the probe slot at
// now.
func (c *Circuit) probeHeld(jobID string, now time.Time) bool {
	return c.State == CircuitHalfOpen && c.ProbeJobID != jobID && c.ProbeUntil != nil && now.Before(*c.ProbeUntil)
}

// close moves the circuit to CLOSED and clears its counts.
func (c *Circuit) close(now time.Time) {
	*c = Circuit{SubscriptionID: c.SubscriptionID, State: CircuitClosed, UpdatedAt: now, Version: c.Version}
}

// open moves the circuit to OPEN until now + cooldown.
func (c *Circuit) open(now time.Time, cooldown time.Duration) {
	if c.State == CircuitClosed || c.OpenedAt == nil {
		opened := now
		c.OpenedAt = &opened
	}
	c.State = CircuitOpen
	c.Cooldown = cooldown
	next := now.Add(cooldown)
	c.NextProbeAt = &next
	c.ProbeJobID, c.ProbeUntil = "", nil
}

// takeProbe gives the probe slot to jobID until until.
func (c *Circuit) takeProbe(jobID string, until time.Time) {
	c.State = CircuitHalfOpen
	c.ProbeJobID = jobID
	c.ProbeUntil = &until
}

// freeProbe makes the probe slot free at once (its job ended without an
// answer of the endpoint): OPEN, due for a probe now.
func (c *Circuit) freeProbe(now time.Time) {
	c.State = CircuitOpen
	c.NextProbeAt = &now
	c.ProbeJobID, c.ProbeUntil = "", nil
}

// CircuitView is a circuit as the API shows it (API.md §12).
type CircuitView struct {
	State               CircuitState `json:"state"`
	ConsecutiveFailures int          `json:"consecutiveFailures"`
	OpenedAt            *time.Time   `json:"openedAt"`
	NextProbeAt         *time.Time   `json:"nextProbeAt"`
}

// View returns the circuit as the API shows it at now.
func (c *Circuit) View(now time.Time) CircuitView {
	return CircuitView{
		State: c.Effective(now), ConsecutiveFailures: c.ConsecutiveFailures,
		OpenedAt: c.OpenedAt, NextProbeAt: c.NextProbeAt,
	}
}

// MarshalJSON renders the view with timestamps in the gateway's format.
func (v CircuitView) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct { //nolint:wrapcheck // plain data
		State               CircuitState          `json:"state"`
		ConsecutiveFailures int                   `json:"consecutiveFailures"`
		OpenedAt            *cloudevent.Timestamp `json:"openedAt"`
		NextProbeAt         *cloudevent.Timestamp `json:"nextProbeAt"`
	}{v.State, v.ConsecutiveFailures, cloudevent.TimestampPtr(v.OpenedAt), cloudevent.TimestampPtr(v.NextProbeAt)})
}
