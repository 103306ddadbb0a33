// Package operational makes the gateway's own operational events ordinary
// events (API.md §12): a subscription's circuit opened or closed, a
// subscription disabled by the gateway, a job discarded to ERROR. Their
// event types are built in — registered at start with JSON Schemas, like
// any type a user registers — and each such status event is ingested
// through the ingest service as a CloudEvent of source "/hooklane", so an
// operator subscribes to "hooklane.*" with an ordinary subscription:
// webhooks to Slack or PagerDuty, pull workers, filters, everything.
//
// Two rules keep them from feeding on themselves:
//   - an event about a subscription carries its id in the "subscriptionid"
//     extension and never matches that subscription (subscription.Index);
//   - a job of an operational event that is discarded produces no
//     hooklane.dispatch.discarded event, so two failing operator
//     subscriptions cannot send each other news of each other forever.
package operational

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
)

// The built-in event types (codes by API.md §2's rule: dot-separated
// segments of [a-z0-9_-]).
const (
	TypeCircuitOpened        = "hooklane.subscription.circuit.opened"
	TypeCircuitClosed        = "hooklane.subscription.circuit.closed"
	TypeSubscriptionDisabled = "hooklane.subscription.disabled"
	TypeDispatchDiscarded    = "hooklane.dispatch.discarded"
	// Source is the source of every operational event.
	Source = subscription.OperationalSource
	// SchemaVersion is the version of the built-in schemas.
	SchemaVersion = "1.0"
)

// typeOf maps the status event types that become operational events to
// their event types.
func typeOf(statusType string) (string, bool) {
	switch statusType {
	case stream.TypeSubscriptionCircuitOpened:
		return TypeCircuitOpened, true
	case stream.TypeSubscriptionCircuitClosed:
		return TypeCircuitClosed, true
	case stream.TypeSubscriptionDisabled:
		return TypeSubscriptionDisabled, true
	case stream.TypeDispatchDiscarded:
		return TypeDispatchDiscarded, true
	}
	return "", false
}

// IsOperational reports whether code is one of the built-in types.
func IsOperational(code string) bool {
	switch code {
	case TypeCircuitOpened, TypeCircuitClosed, TypeSubscriptionDisabled, TypeDispatchDiscarded:
		return true
	}
	return false
}

const subscriptionSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["subscriptionId", "subscription", "reason"],
  "properties": {
    "subscriptionId": {"type": "string", "description": "the subscription's id"},
    "subscription": {"type": "string", "description": "the subscription's code"},
    "clientId": {"type": ["string", "null"], "description": "the subscription's client"},
    "reason": {"type": "string"},
    "consecutiveFailures": {"type": "integer", "minimum": 0},
    "nextProbeAt": {"type": "string", "format": "date-time"}
  }
}`

const discardedSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["jobId", "error"],
  "properties": {
    "jobId": {"type": "string"},
    "eventId": {"type": "string"},
    "eventType": {"type": "string"},
    "subscriptionId": {"type": "string"},
    "subscription": {"type": "string"},
    "messageGroup": {"type": "string"},
    "attempt": {"type": "integer", "minimum": 0},
    "statusCode": {"type": "integer"},
    "error": {"type": "string"}
  }
}`

// EventTypes returns the built-in event types, each with version 1.0
// CURRENT, dated at.
func EventTypes(at time.Time) []*schema.EventType {
	at = at.UTC().Truncate(time.Millisecond)
	def := func(code, name, description, sch string) *schema.EventType {
		return &schema.EventType{
			Code: code, Name: name, Description: description, Status: schema.TypeCurrent,
			Versions: []schema.Version{{
				Version: SchemaVersion, SchemaType: "JSON_SCHEMA", MimeType: "application/json",
				Schema: json.RawMessage(sch), Status: schema.VersionCurrent, CreatedAt: at, UpdatedAt: at,
			}},
			CreatedAt: at, UpdatedAt: at,
		}
	}
	return []*schema.EventType{
		def(TypeCircuitOpened, "Circuit opened",
			"The gateway stopped sending to a subscription's target after consecutive failures (or a failed probe); data.nextProbeAt is its next try.",
			subscriptionSchema),
		def(TypeCircuitClosed, "Circuit closed",
			"A subscription's target answered again (or the subscription was resumed): deliveries run, the jobs that waited go out.",
			subscriptionSchema),
		def(TypeSubscriptionDisabled, "Subscription disabled",
			"The gateway paused a subscription whose every attempt failed for HOOKLANE_AUTO_DISABLE_AFTER; resume it to re-enable.",
			subscriptionSchema),
		def(TypeDispatchDiscarded, "Dispatch job discarded",
			"A dispatch job ended in ERROR: attempts exhausted, max age passed, or an answer no retry can fix.",
			discardedSchema),
	}
}

// RegisterStore is what Register needs of the store.
type RegisterStore interface {
	EventTypeGet(ctx context.Context, code string) (*schema.EventType, error)
	EventTypeInsert(ctx context.Context, t *schema.EventType) error
}

// Register stores every built-in event type that is not stored yet, and
// reports whether it stored any. A type already stored is left as it is
// (an operator may have archived it, or added versions); several instances
// starting at once store each type once. Idempotent.
func Register(ctx context.Context, st RegisterStore, at time.Time) (bool, error) {
	added := false
	for _, t := range EventTypes(at) {
		_, err := st.EventTypeGet(ctx, t.Code)
		if err == nil {
			continue
		}
		if !errors.Is(err, store.ErrNotFound) {
			return added, fmt.Errorf("get event type %s: %w", t.Code, err)
		}
		if err := st.EventTypeInsert(ctx, t); err != nil {
			if errors.Is(err, store.ErrConflict) {
				continue // another instance registered it just now
			}
			return added, fmt.Errorf("register event type %s: %w", t.Code, err)
		}
		added = true
	}
	return added, nil
}
