// Package subscription holds subscriptions, their lifecycle (Service:
// create, patch, pause, resume, delete with its cascade to the jobs, secret
// rotation), the index that matches events against them, and the cache in
// front of it.
package subscription

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/dispatch"
)

// Status is a subscription's state.
type Status string

// Subscription statuses.
const (
	// StatusActive matches new events.
	StatusActive Status = "ACTIVE"
	// StatusPaused matches no new events; its pending jobs wait.
	StatusPaused Status = "PAUSED"
)

// Subscription is a consumer's interest in event types, and where and how
// its jobs are delivered. Its JSON form is the API's.
type Subscription struct {
	ID          string    `json:"id"`
	Code        string    `json:"code"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	ClientID    *string   `json:"clientId"`
	EventTypes  []Binding `json:"eventTypes"`
	Filters     []Filter  `json:"filters"`
	Target      string    `json:"target"`
	// Destination is the message broker the subscription delivers to
	// instead of a target (API.md §15): as a request sends it until the
	// Service decodes it, then in its stored form, secrets in clear. Nil
	// for an HTTP target. Answers show it masked (MarshalJSON).
	Destination json.RawMessage `json:"destination"`
	// TargetURL is where a destination delivers, without secrets
	// ("kafka://broker-1:9092/orders"), set by the Service when it decodes
	// the destination; "" without one. Jobs carry it as their targetUrl.
	TargetURL      string            `json:"targetUrl,omitempty"`
	Headers        map[string]string `json:"headers"`
	Mode           dispatch.Mode     `json:"mode"`
	Delivery       dispatch.Delivery `json:"delivery"`
	DispatchPoolID *string           `json:"dispatchPoolId"`
	TimeoutSeconds int               `json:"timeoutSeconds"`
	MaxAgeSeconds  int               `json:"maxAgeSeconds"`
	DelaySeconds   int               `json:"delaySeconds"`
	Sequence       int               `json:"sequence"`
	DataOnly       bool              `json:"dataOnly"`
	Retry          dispatch.Retry    `json:"retry"`
	Status         Status            `json:"status"`
	// StatusReason says why and since when the gateway paused the
	// subscription (auto-disable, API.md §12); nil otherwise. Only the
	// gateway sets it, so it is no member a request can write.
	StatusReason *string    `json:"-"`
	CustomConfig []KeyValue `json:"customConfig"`
	// Auth authenticates push deliveries to the target (API.md §14); nil
	// for none. Its secrets are write-only: MarshalJSON masks them.
	Auth *endpoint.Auth `json:"auth"`
	// TLS is the client certificate and CA of push deliveries to an https
	// target (API.md §14); nil for the defaults. Its key is write-only.
	TLS *endpoint.TLS `json:"tls"`
	// Transformation reshapes each push delivery in JavaScript (API.md
	// §16); nil for none.
	Transformation *Transformation `json:"transformation"`
	// Circuit is the subscription's circuit as the API shows it, set by the
	// API before it answers; never stored. Nil renders a CLOSED circuit for
	// a push subscription and null for a pull one (it has none).
	Circuit *dispatch.CircuitView `json:"-"`
	// Secrets sign deliveries: the newest first; an older one keeps signing
	// until its ExpiresAt. Shown only by the secret endpoints.
	Secrets   []Secret  `json:"-"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// Version counts the stored subscription's writes. An update names the
	// version it read and fails with store.ErrStale when another write came
	// between (an auto-disable, another instance's change), so that no
	// write puts back what it did not see. Kept by the store, not shown.
	Version int64 `json:"-"`

	// destinationView is the masked destination answers show, set by the
	// Service; nil until then (MarshalJSON then shows the type only).
	destinationView json.RawMessage
}

// Binding ties a subscription to an event type code or pattern.
type Binding struct {
	// EventTypeCode is an exact code or a pattern with `*` (API.md §3).
	EventTypeCode string `json:"eventTypeCode"`
	// SpecVersion, when set, restricts to events resolved to that schema
	// version.
	SpecVersion string `json:"specVersion,omitempty"`
}

// Filter is one condition on an event; a subscription's filters are ANDed.
type Filter struct {
	// Field is a CloudEvents attribute or extension name, or data.<path>.
	Field string `json:"field"`
	// Op is one of eq, neq, in, prefix, suffix, exists, gt, gte, lt, lte.
	Op string `json:"op"`
	// Value is the JSON operand.
	Value json.RawMessage `json:"value"`
}

// KeyValue is one entry of a subscription's custom configuration.
type KeyValue struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Secret is one signing secret of a subscription.
type Secret struct {
	// Value is "whsec_" followed by base64 of the key bytes.
	Value string `json:"secret"`
	// ExpiresAt is nil for the current secret.
	ExpiresAt *time.Time `json:"expiresAt"`
}

// Store is the storage port for subscriptions.
type Store interface {
	// SubscriptionInsert stores a new subscription; store.ErrConflict when
	// its (clientId, code) pair exists.
	SubscriptionInsert(ctx context.Context, s *Subscription) error
	// SubscriptionGetByID returns one subscription.
	SubscriptionGetByID(ctx context.Context, id string) (*Subscription, error)
	// SubscriptionList returns one page, newest first.
	SubscriptionList(ctx context.Context, p *ListParams) (*Page, error)
	// SubscriptionListAll returns every subscription, for the matching
	// index.
	SubscriptionListAll(ctx context.Context) ([]*Subscription, error)
	// SubscriptionUpdate replaces a stored subscription, found by id;
	// store.ErrConflict when its (clientId, code) now clashes.
	SubscriptionUpdate(ctx context.Context, s *Subscription) error
	// SubscriptionDelete removes a subscription.
	SubscriptionDelete(ctx context.Context, id string) error
	// SubscriptionGeneration returns a number that changes (grows) on every
	// insert, update and delete of a subscription, so instances notice
	// changes made elsewhere.
	SubscriptionGeneration(ctx context.Context) (int64, error)
}

// ListParams filters and pages SubscriptionList.
type ListParams struct {
	Status Status
	// ClientID filters on the client when non-nil ("" matches no client).
	ClientID *string
	// EventType keeps subscriptions with a binding whose code equals it.
	EventType string
	// DestinationType keeps subscriptions of one kind (API.md §15): a
	// destination type ("kafka"), or DestinationWebhook for push
	// subscriptions with an HTTP target. The Service filters on it
	// (ListMatching); the stores ignore it.
	DestinationType string
	Limit           int
	Cursor          string
}

// Page is one page of subscriptions.
type Page struct {
	Subscriptions []*Subscription
	NextCursor    string
}

// JobSettings returns the delivery settings the subscription gives each of
// its jobs.
func (s *Subscription) JobSettings() *dispatch.Settings {
	set := &dispatch.Settings{
		SubscriptionID: s.ID, Subscription: s.Code, Target: s.DeliveryTarget(), Headers: s.Headers,
		Mode: s.Mode, Delivery: s.Delivery, TimeoutSeconds: s.TimeoutSeconds, MaxAgeSeconds: s.MaxAgeSeconds,
		DelaySeconds: s.DelaySeconds, DataOnly: s.DataOnly, Retry: s.Retry,
	}
	if s.DispatchPoolID != nil {
		set.DispatchPoolID = *s.DispatchPoolID
	}
	return set
}
