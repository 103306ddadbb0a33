package mongostore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/subscription"
)

// subscriptionDoc is a subscription.Subscription as stored. ClientID is null
// for no client: the unique (clientId, code) index then treats "no client"
// as one scope, as the port requires.
type subscriptionDoc struct {
	ID          string       `bson:"_id"`
	Code        string       `bson:"code"`
	Name        string       `bson:"name"`
	Description string       `bson:"description"`
	ClientID    *string      `bson:"clientId"`
	EventTypes  []bindingDoc `bson:"eventTypes"`
	// EventTypeCodes repeats the bindings' codes as a plain array, which
	// the EventType list filter matches (array equality works on every
	// server; dotted paths into arrays of documents do not on FerretDB v1).
	EventTypeCodes []string      `bson:"eventTypeCodes"`
	Filters        []filterDoc   `bson:"filters"`
	Target         string        `bson:"target"`
	Headers        []keyValueDoc `bson:"headers"`
	Mode           string        `bson:"mode"`
	Delivery       string        `bson:"delivery"`
	DispatchPoolID *string       `bson:"dispatchPoolId"`
	TimeoutSeconds int           `bson:"timeoutSeconds"`
	MaxAgeSeconds  int           `bson:"maxAgeSeconds"`
	DelaySeconds   int           `bson:"delaySeconds"`
	Sequence       int           `bson:"sequence"`
	DataOnly       bool          `bson:"dataOnly"`
	Retry          retryDoc      `bson:"retry"`
	Status         string        `bson:"status"`
	StatusReason   *string       `bson:"statusReason"`
	CustomConfig   []keyValueDoc `bson:"customConfig"`
	Auth           *authDoc      `bson:"auth,omitempty"`
	TLS            *tlsDoc       `bson:"tls,omitempty"`
	// Transformation is the subscription's JavaScript handler (API.md
	// §16); absent for none.
	Transformation *transformationDoc `bson:"transformation,omitempty"`
	// Destination is the message broker (API.md §15) as the subscription
	// keeps it, its JSON text (sealed whole when the store has a key);
	// TargetURL its targetUrl. Absent for an HTTP target.
	Destination string      `bson:"destination,omitempty"`
	TargetURL   string      `bson:"targetUrl,omitempty"`
	Secrets     []secretDoc `bson:"secrets"`
	CreatedAt   time.Time   `bson:"createdAt"`
	UpdatedAt   time.Time   `bson:"updatedAt"`
	// Version grows with every write (subscription.Subscription.Version);
	// documents stored before it existed get 0 in prepare.
	Version int64 `bson:"version"`
}

type bindingDoc struct {
	EventTypeCode string `bson:"eventTypeCode"`
	SpecVersion   string `bson:"specVersion"`
}

type filterDoc struct {
	Field string `bson:"field"`
	Op    string `bson:"op"`
	// Value is the JSON operand, byte for byte.
	Value []byte `bson:"value"`
}

// transformationDoc is a subscription.Transformation as stored.
type transformationDoc struct {
	Code    string `bson:"code"`
	Enabled *bool  `bson:"enabled"`
}

func toTransformationDoc(t *subscription.Transformation) *transformationDoc {
	if t == nil {
		return nil
	}
	return &transformationDoc{Code: t.Code, Enabled: t.Enabled}
}

func (d *transformationDoc) asDomain() *subscription.Transformation {
	if d == nil {
		return nil
	}
	return &subscription.Transformation{Code: d.Code, Enabled: d.Enabled}
}

type secretDoc struct {
	Value     string     `bson:"secret"`
	ExpiresAt *time.Time `bson:"expiresAt"`
}

// mapSlice converts a slice element by element, keeping nil (and empty
// empty), so what is read back equals what was written.
func mapSlice[S, D any](in []S, f func(*S) D) []D {
	if in == nil {
		return nil
	}
	out := make([]D, len(in))
	for i := range in {
		out[i] = f(&in[i])
	}
	return out
}

func toSubscriptionDoc(s *subscription.Subscription) *subscriptionDoc {
	d := &subscriptionDoc{
		ID:          s.ID,
		Code:        s.Code,
		Name:        s.Name,
		Description: s.Description,
		ClientID:    s.ClientID,
		EventTypes: mapSlice(s.EventTypes, func(b *subscription.Binding) bindingDoc {
			return bindingDoc{EventTypeCode: b.EventTypeCode, SpecVersion: b.SpecVersion}
		}),
		EventTypeCodes: make([]string, 0, len(s.EventTypes)),
		Filters: mapSlice(s.Filters, func(f *subscription.Filter) filterDoc {
			return filterDoc{Field: f.Field, Op: f.Op, Value: f.Value}
		}),
		Target:         s.Target,
		Headers:        toKeyValues(s.Headers),
		Mode:           string(s.Mode),
		Delivery:       string(s.Delivery),
		DispatchPoolID: s.DispatchPoolID,
		TimeoutSeconds: s.TimeoutSeconds,
		MaxAgeSeconds:  s.MaxAgeSeconds,
		DelaySeconds:   s.DelaySeconds,
		Sequence:       s.Sequence,
		DataOnly:       s.DataOnly,
		Retry: retryDoc{
			MaxAttempts:           s.Retry.MaxAttempts,
			InitialBackoffSeconds: s.Retry.InitialBackoffSeconds,
			MaxBackoffSeconds:     s.Retry.MaxBackoffSeconds,
		},
		Status:       string(s.Status),
		StatusReason: s.StatusReason,
		CustomConfig: mapSlice(s.CustomConfig, func(kv *subscription.KeyValue) keyValueDoc {
			return keyValueDoc{Key: kv.Key, Value: kv.Value}
		}),
		Auth:           toAuthDoc(s.Auth),
		TLS:            toTLSDoc(s.TLS),
		Transformation: toTransformationDoc(s.Transformation),
		Destination:    string(s.Destination),
		TargetURL:      s.TargetURL,
		Secrets: mapSlice(s.Secrets, func(x *subscription.Secret) secretDoc {
			return secretDoc{Value: x.Value, ExpiresAt: msPtr(x.ExpiresAt)}
		}),
		CreatedAt: ms(s.CreatedAt),
		UpdatedAt: ms(s.UpdatedAt),
		Version:   s.Version,
	}
	for _, b := range s.EventTypes {
		d.EventTypeCodes = append(d.EventTypeCodes, b.EventTypeCode)
	}
	return d
}

func (d *subscriptionDoc) asDomain() *subscription.Subscription {
	return &subscription.Subscription{
		ID:          d.ID,
		Code:        d.Code,
		Name:        d.Name,
		Description: d.Description,
		ClientID:    d.ClientID,
		EventTypes: mapSlice(d.EventTypes, func(b *bindingDoc) subscription.Binding {
			return subscription.Binding{EventTypeCode: b.EventTypeCode, SpecVersion: b.SpecVersion}
		}),
		Filters: mapSlice(d.Filters, func(f *filterDoc) subscription.Filter {
			return subscription.Filter{Field: f.Field, Op: f.Op, Value: f.Value}
		}),
		Target:         d.Target,
		Headers:        fromKeyValues(d.Headers),
		Mode:           dispatch.Mode(d.Mode),
		Delivery:       dispatch.Delivery(d.Delivery),
		DispatchPoolID: d.DispatchPoolID,
		TimeoutSeconds: d.TimeoutSeconds,
		MaxAgeSeconds:  d.MaxAgeSeconds,
		DelaySeconds:   d.DelaySeconds,
		Sequence:       d.Sequence,
		DataOnly:       d.DataOnly,
		Retry: dispatch.Retry{
			MaxAttempts:           d.Retry.MaxAttempts,
			InitialBackoffSeconds: d.Retry.InitialBackoffSeconds,
			MaxBackoffSeconds:     d.Retry.MaxBackoffSeconds,
		},
		Status:       subscription.Status(d.Status),
		StatusReason: d.StatusReason,
		CustomConfig: mapSlice(d.CustomConfig, func(kv *keyValueDoc) subscription.KeyValue {
			return subscription.KeyValue{Key: kv.Key, Value: kv.Value}
		}),
		Auth:           d.Auth.asDomain(),
		TLS:            d.TLS.asDomain(),
		Transformation: d.Transformation.asDomain(),
		Destination:    rawOrNil(d.Destination),
		TargetURL:      d.TargetURL,
		Secrets: mapSlice(d.Secrets, func(x *secretDoc) subscription.Secret {
			return subscription.Secret{Value: x.Value, ExpiresAt: utcPtr(x.ExpiresAt)}
		}),
		CreatedAt: utc(d.CreatedAt),
		UpdatedAt: utc(d.UpdatedAt),
		Version:   d.Version,
	}
}

// SubscriptionInsert stores a new subscription; store.ErrConflict when its
// (clientId, code) pair (or its id) exists.
func (s *Store) SubscriptionInsert(ctx context.Context, sub *subscription.Subscription) error {
	if err := s.check(); err != nil {
		return err
	}
	doc, err := s.subscriptionDoc(sub)
	if err != nil {
		return fmt.Errorf("insert subscription %s: %w", sub.Code, err)
	}
	if _, err := s.subscriptions.InsertOne(ctx, doc); err != nil {
		return fmt.Errorf("insert subscription %s: %w", sub.Code, translate(ctx, err))
	}
	if err := s.bumpGeneration(ctx, genSubscriptions); err != nil {
		return fmt.Errorf("insert subscription %s: %w", sub.Code, err)
	}
	return nil
}

// SubscriptionGetByID returns one subscription; store.ErrNotFound when there
// is none.
func (s *Store) SubscriptionGetByID(ctx context.Context, id string) (*subscription.Subscription, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var doc subscriptionDoc
	if err := s.subscriptions.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&doc); err != nil {
		return nil, fmt.Errorf("get subscription %s: %w", id, translate(ctx, err))
	}
	sub, err := s.subscription(&doc)
	if err != nil {
		return nil, fmt.Errorf("get subscription %s: %w", id, err)
	}
	return sub, nil
}

// SubscriptionList returns one page of subscriptions, newest (highest id)
// first.
func (s *Store) SubscriptionList(ctx context.Context, p *subscription.ListParams) (*subscription.Page, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	filter := bson.D{}
	if p.Status != "" {
		filter = append(filter, bson.E{Key: "status", Value: string(p.Status)})
	}
	if p.ClientID != nil {
		var client any = *p.ClientID
		if *p.ClientID == "" {
			client = nil // "" asks for the subscriptions of no client
		}
		filter = append(filter, bson.E{Key: "clientId", Value: client})
	}
	if p.EventType != "" {
		filter = append(filter, bson.E{Key: "eventTypeCodes", Value: p.EventType})
	}
	docs, next, err := findPage[subscriptionDoc](ctx, s.subscriptions, filter, p.Cursor, p.Limit,
		func(d *subscriptionDoc) string { return d.ID })
	if err != nil {
		return nil, fmt.Errorf("list subscriptions: %w", err)
	}
	page := &subscription.Page{Subscriptions: make([]*subscription.Subscription, len(docs)), NextCursor: next}
	for i := range docs {
		if page.Subscriptions[i], err = s.subscription(&docs[i]); err != nil {
			return nil, fmt.Errorf("list subscriptions: %w", err)
		}
	}
	return page, nil
}

// SubscriptionListAll returns every subscription, for the matching index.
func (s *Store) SubscriptionListAll(ctx context.Context) ([]*subscription.Subscription, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	docs, err := findAll[subscriptionDoc](ctx, s.subscriptions, bson.D{})
	if err != nil {
		return nil, fmt.Errorf("list all subscriptions: %w", err)
	}
	out := make([]*subscription.Subscription, len(docs))
	for i := range docs {
		if out[i], err = s.subscription(&docs[i]); err != nil {
			return nil, fmt.Errorf("list all subscriptions: %w", err)
		}
	}
	return out, nil
}

// SubscriptionUpdate replaces a stored subscription, found by id, when its
// version is still sub.Version, and grows the version; store.ErrStale when
// another write came first, store.ErrConflict when its (clientId, code) now
// clashes, store.ErrNotFound when it is gone.
func (s *Store) SubscriptionUpdate(ctx context.Context, sub *subscription.Subscription) error {
	if err := s.check(); err != nil {
		return err
	}
	doc, err := s.subscriptionDoc(sub)
	if err != nil {
		return fmt.Errorf("update subscription %s: %w", sub.ID, err)
	}
	doc.Version = sub.Version + 1
	if err := s.replaceVersioned(ctx, s.subscriptions, sub.ID, "version", sub.Version, doc); err != nil {
		return fmt.Errorf("update subscription %s: %w", sub.ID, err)
	}
	sub.Version++
	if err := s.bumpGeneration(ctx, genSubscriptions); err != nil {
		return fmt.Errorf("update subscription %s: %w", sub.ID, err)
	}
	return nil
}

// SubscriptionDelete removes a subscription; store.ErrNotFound when there is
// none.
func (s *Store) SubscriptionDelete(ctx context.Context, id string) error {
	if err := s.check(); err != nil {
		return err
	}
	res, err := s.subscriptions.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}})
	if err != nil {
		return fmt.Errorf("delete subscription %s: %w", id, translate(ctx, err))
	}
	if res.DeletedCount == 0 {
		return fmt.Errorf("delete subscription %s: %w", id, store.ErrNotFound)
	}
	if err := s.bumpGeneration(ctx, genSubscriptions); err != nil {
		return fmt.Errorf("delete subscription %s: %w", id, err)
	}
	return nil
}

// SubscriptionGeneration returns a number that grows on every insert, update
// and delete of a subscription (by any instance); 0 before the first.
func (s *Store) SubscriptionGeneration(ctx context.Context) (int64, error) {
	return s.generation(ctx, genSubscriptions)
}

// rawOrNil is a stored JSON text as a raw message, nil when empty.
func rawOrNil(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}
