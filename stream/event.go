// Package stream holds the status events every job transition and accepted
// event produce, their storage port, and the Server-Sent Events hub that
// publishes them.
package stream

import (
	"encoding/json"
	"time"

	"github.com/hooklane/hooklane/event/cloudevent"
)

// Status event types, the `type` of the CloudEvent a client receives.
const (
	TypeEventAccepted      = "event.accepted"
	TypeDispatchCreated    = "dispatch.created"
	TypeDispatchQueued     = "dispatch.queued"
	TypeDispatchStarted    = "dispatch.started"
	TypeDispatchCompleted  = "dispatch.completed"
	TypeDispatchFailed     = "dispatch.failed"
	TypeDispatchDiscarded  = "dispatch.discarded"
	TypeDispatchCancelled  = "dispatch.cancelled"
	TypeDispatchBlocked    = "dispatch.blocked"
	TypeDispatchPending    = "dispatch.pending"
	statusEventSource      = "/hooklane"
	statusEventSpecVersion = cloudevent.SpecVersion
)

// Subscription status event types (API.md §7, §12): a circuit's
// transitions and the gateway's disabling of a subscription. Their subject
// is the subscription id.
const (
	TypeSubscriptionCircuitOpened = "subscription.circuit.opened"
	TypeSubscriptionCircuitClosed = "subscription.circuit.closed"
	TypeSubscriptionDisabled      = "subscription.disabled"
)

// Event is one status event: a state change of a job, or an accepted event.
type Event struct {
	// ID is a ULID, the SSE id and the Last-Event-ID to resume after.
	ID string
	// Type is one of the Type* constants.
	Type string
	// Time is when the change happened.
	Time time.Time
	// Subject is the job id (dispatch.*), the gateway event id
	// (event.accepted) or the subscription id (subscription.*).
	Subject string
	// Data is the payload.
	Data Data
}

// Data is the data member of a status event. Fields that do not apply are
// omitted.
type Data struct {
	JobID        string `json:"jobId,omitempty"`
	EventID      string `json:"eventId,omitempty"`
	EventType    string `json:"eventType,omitempty"`
	Subscription string `json:"subscription,omitempty"`
	// Subscriptions are the codes an event.accepted event matched; always
	// present on that type (an empty list when none), absent on the others.
	Subscriptions []string   `json:"subscriptions,omitzero"`
	Status        string     `json:"status,omitempty"`
	Attempt       int        `json:"attempt,omitempty"`
	StatusCode    int        `json:"statusCode,omitempty"`
	DurationMs    int64      `json:"durationMs,omitempty"`
	Error         string     `json:"error,omitempty"`
	MessageGroup  string     `json:"messageGroup,omitempty"`
	NextAttemptAt *time.Time `json:"nextAttemptAt,omitempty"`
	BlockedBy     string     `json:"blockedBy,omitempty"`
	Worker        string     `json:"worker,omitempty"`
	// ClientID is the client of the subscription a subscription.* event is
	// about, when it has one.
	ClientID string `json:"clientId,omitempty"`
	// Reason says why a circuit opened or closed, or why a subscription was
	// disabled.
	Reason string `json:"reason,omitempty"`
	// ConsecutiveFailures is the circuit's count of consecutive failed
	// attempts (subscription.circuit.opened, subscription.disabled).
	ConsecutiveFailures int `json:"consecutiveFailures,omitempty"`
	// NextProbeAt is when an open circuit lets its probe through.
	NextProbeAt *time.Time `json:"nextProbeAt,omitempty"`
	// Scanned, Matched and Created are a replay's counters (replay.*
	// events, API.md §13); nil on the other types.
	Scanned *int64 `json:"scanned,omitempty"`
	Matched *int64 `json:"matched,omitempty"`
	Created *int64 `json:"created,omitempty"`
}

// MarshalJSON renders the data with timestamps in the gateway's format.
func (d Data) MarshalJSON() ([]byte, error) {
	type plain Data
	out := struct {
		plain
		NextAttemptAt string `json:"nextAttemptAt,omitempty"`
		NextProbeAt   string `json:"nextProbeAt,omitempty"`
	}{plain: plain(d)}
	if d.NextAttemptAt != nil {
		out.NextAttemptAt = cloudevent.FormatTime(*d.NextAttemptAt)
	}
	if d.NextProbeAt != nil {
		out.NextProbeAt = cloudevent.FormatTime(*d.NextProbeAt)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err //nolint:wrapcheck // plain struct, cannot fail
	}
	return b, nil
}

// CloudEvent renders the status event as the CloudEvent a stream client
// receives.
func (e *Event) CloudEvent() ([]byte, error) {
	d := e.Data
	if e.Type == TypeEventAccepted && d.Subscriptions == nil {
		d.Subscriptions = []string{} // read back from a store as nil
	}
	data, err := json.Marshal(d)
	if err != nil {
		return nil, err //nolint:wrapcheck // plain struct, cannot fail
	}
	ce := cloudevent.Event{
		SpecVersion:     statusEventSpecVersion,
		ID:              e.ID,
		Source:          statusEventSource,
		Type:            e.Type,
		Subject:         e.Subject,
		Time:            e.Time,
		DataContentType: "application/json",
		Data:            data,
	}
	return ce.MarshalJSON()
}
