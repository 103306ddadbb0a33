package mongostore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
)

// circuitDoc is a dispatch.Circuit as stored; _id is the subscription id.
type circuitDoc struct {
	ID                  string     `bson:"_id"`
	State               string     `bson:"state"`
	ConsecutiveFailures int        `bson:"consecutiveFailures"`
	OpenedAt            *time.Time `bson:"openedAt"`
	NextProbeAt         *time.Time `bson:"nextProbeAt"`
	CooldownMs          int64      `bson:"cooldownMs"`
	ProbeJobID          string     `bson:"probeJobId"`
	ProbeUntil          *time.Time `bson:"probeUntil"`
	FailingSince        *time.Time `bson:"failingSince"`
	UpdatedAt           time.Time  `bson:"updatedAt"`
	Version             int64      `bson:"version"`
	// Outbox are the operational outbox events of the circuit's writes not
	// yet relayed (dispatch.CircuitUpdateParams.Outbox): kept in the
	// circuit's document, so that they are stored by the one document
	// write of the transition that causes them.
	Outbox []statusEventDoc `bson:"operationalOutbox,omitempty"`
}

// outboxField is the member of circuit and subscription documents that
// holds their operational outbox events.
const outboxField = "operationalOutbox"

func toCircuitDoc(c *dispatch.Circuit) *circuitDoc {
	return &circuitDoc{
		ID: c.SubscriptionID, State: string(c.State), ConsecutiveFailures: c.ConsecutiveFailures,
		OpenedAt: msPtr(c.OpenedAt), NextProbeAt: msPtr(c.NextProbeAt), CooldownMs: c.Cooldown.Milliseconds(),
		ProbeJobID: c.ProbeJobID, ProbeUntil: msPtr(c.ProbeUntil), FailingSince: msPtr(c.FailingSince),
		UpdatedAt: ms(c.UpdatedAt), Version: c.Version,
	}
}

func (d *circuitDoc) asDomain() *dispatch.Circuit {
	return &dispatch.Circuit{
		SubscriptionID: d.ID, State: dispatch.CircuitState(d.State), ConsecutiveFailures: d.ConsecutiveFailures,
		OpenedAt: utcPtr(d.OpenedAt), NextProbeAt: utcPtr(d.NextProbeAt), Cooldown: time.Duration(d.CooldownMs) * time.Millisecond,
		ProbeJobID: d.ProbeJobID, ProbeUntil: utcPtr(d.ProbeUntil), FailingSince: utcPtr(d.FailingSince),
		UpdatedAt: utc(d.UpdatedAt), Version: d.Version,
	}
}

func circuitsAsDomain(docs []circuitDoc) []*dispatch.Circuit {
	out := make([]*dispatch.Circuit, len(docs))
	for i := range docs {
		out[i] = docs[i].asDomain()
	}
	return out
}

// CircuitGet returns a subscription's circuit; store.ErrNotFound when none
// is stored.
func (s *Store) CircuitGet(ctx context.Context, subscriptionID string) (*dispatch.Circuit, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var doc circuitDoc
	if err := s.circuits.FindOne(ctx, bson.D{{Key: "_id", Value: subscriptionID}}).Decode(&doc); err != nil {
		return nil, fmt.Errorf("get circuit of subscription %s: %w", subscriptionID, translate(ctx, err))
	}
	return doc.asDomain(), nil
}

// CircuitGetMany returns the stored circuits of the given subscriptions.
func (s *Store) CircuitGetMany(ctx context.Context, subscriptionIDs []string) ([]*dispatch.Circuit, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if len(subscriptionIDs) == 0 {
		return nil, nil
	}
	docs, err := findAll[circuitDoc](ctx, s.circuits, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: subscriptionIDs}}}})
	if err != nil {
		return nil, fmt.Errorf("get circuits: %w", err)
	}
	return circuitsAsDomain(docs), nil
}

// CircuitListNotClosed returns up to limit circuits that are not CLOSED,
// earliest OpenedAt first.
func (s *Store) CircuitListNotClosed(ctx context.Context, limit int) ([]*dispatch.Circuit, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 100
	}
	docs, err := findAll[circuitDoc](ctx, s.circuits,
		bson.D{{Key: "state", Value: bson.D{{Key: "$ne", Value: string(dispatch.CircuitClosed)}}}},
		options.Find().SetSort(bson.D{{Key: "openedAt", Value: 1}, {Key: "_id", Value: 1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, fmt.Errorf("list circuits not closed: %w", err)
	}
	return circuitsAsDomain(docs), nil
}

// CircuitUpdate writes p.Circuit when the stored version is
// p.Circuit.Version (0: none stored, inserted), then stores its status
// events.
func (s *Store) CircuitUpdate(ctx context.Context, p *dispatch.CircuitUpdateParams) error {
	if err := s.check(); err != nil {
		return err
	}
	c := p.Circuit
	doc := toCircuitDoc(c)
	doc.Version = c.Version + 1
	if c.Version > 0 {
		// The replace below rewrites the whole document: it carries the
		// outbox events not relayed yet. One the relay deletes between
		// this read and the replace comes back and is relayed again, a
		// duplicate the ingest's dedup by id absorbs; none is lost (the
		// relay only removes, and a concurrent transition fails the
		// version check).
		var cur circuitDoc
		err := s.circuits.FindOne(ctx, bson.D{{Key: "_id", Value: c.SubscriptionID}},
			options.FindOne().SetProjection(bson.D{{Key: outboxField, Value: 1}})).Decode(&cur)
		if err != nil {
			return fmt.Errorf("update circuit of subscription %s: read its outbox: %w", c.SubscriptionID, translate(ctx, err))
		}
		doc.Outbox = cur.Outbox
	}
	for i := range p.Outbox {
		doc.Outbox = append(doc.Outbox, toStatusEventDoc(&p.Outbox[i]))
	}
	if c.Version == 0 {
		if _, err := s.circuits.InsertOne(ctx, doc); err != nil {
			return fmt.Errorf("insert circuit of subscription %s: %w", c.SubscriptionID, translate(ctx, err))
		}
	} else if err := s.replaceVersioned(ctx, s.circuits, c.SubscriptionID, "version", c.Version, doc); err != nil {
		return fmt.Errorf("update circuit of subscription %s at version %d: %w", c.SubscriptionID, c.Version, err)
	}
	c.Version = doc.Version
	if err := s.insertStatusEvents(ctx, p.Events); err != nil {
		return fmt.Errorf("update circuit of subscription %s: insert status events: %w", c.SubscriptionID, err)
	}
	return nil
}

// CircuitDelete removes a subscription's circuit.
func (s *Store) CircuitDelete(ctx context.Context, subscriptionID string) error {
	if err := s.check(); err != nil {
		return err
	}
	if _, err := s.circuits.DeleteOne(ctx, bson.D{{Key: "_id", Value: subscriptionID}}); err != nil {
		return fmt.Errorf("delete circuit of subscription %s: %w", subscriptionID, translate(ctx, err))
	}
	return nil
}

// SubscriptionDisable pauses an ACTIVE subscription with a status reason
// and grows its version (so an update that read it before fails as stale),
// then stores the status events and bumps the subscription generation.
// On MongoDB the filtered update is atomic against SubscriptionUpdate's
// filtered replace; FerretDB v1 runs both as a read and a write, and this
// update takes no write guard, so there the two can still interleave (the
// local test stack only).
func (s *Store) SubscriptionDisable(ctx context.Context, p *dispatch.SubscriptionDisableParams) (bool, error) {
	if err := s.check(); err != nil {
		return false, err
	}
	update := bson.D{{Key: "$set", Value: bson.D{
		{Key: "status", Value: string(subscription.StatusPaused)},
		{Key: "statusReason", Value: p.Reason},
		{Key: "updatedAt", Value: ms(p.At)},
	}}, {Key: "$inc", Value: bson.D{{Key: "version", Value: 1}}}}
	if len(p.Outbox) > 0 {
		// The outbox events go into the subscription's document, in the
		// same update.
		docs := make(bson.A, len(p.Outbox))
		for i := range p.Outbox {
			docs[i] = toStatusEventDoc(&p.Outbox[i])
		}
		update = append(update, bson.E{Key: "$push", Value: bson.D{{Key: outboxField, Value: bson.D{{Key: "$each", Value: docs}}}}})
	}
	res, err := s.subscriptions.UpdateOne(ctx,
		bson.D{{Key: "_id", Value: p.SubscriptionID}, {Key: "status", Value: string(subscription.StatusActive)}}, update)
	if err != nil {
		return false, fmt.Errorf("disable subscription %s: %w", p.SubscriptionID, translate(ctx, err))
	}
	if res.MatchedCount == 0 {
		if err := s.missingOr(ctx, s.subscriptions, p.SubscriptionID, nil); err != nil {
			return false, fmt.Errorf("disable subscription %s: %w", p.SubscriptionID, err)
		}
		return false, nil
	}
	if err := s.insertStatusEvents(ctx, p.Events); err != nil {
		return true, fmt.Errorf("disable subscription %s: insert status events: %w", p.SubscriptionID, err)
	}
	if err := s.bumpGeneration(ctx, genSubscriptions); err != nil {
		return true, fmt.Errorf("disable subscription %s: %w", p.SubscriptionID, err)
	}
	return true, nil
}

// outboxHolder is the outbox member of a circuit or subscription document,
// with its id and version.
type outboxHolder struct {
	ID      string           `bson:"_id"`
	Version int64            `bson:"version"`
	Outbox  []statusEventDoc `bson:"operationalOutbox"`
}

// outboxRetries bounds the rewrites of one document's outbox that lose to
// a concurrent write of the document.
const outboxRetries = 5

// outboxDeleteFrom removes the outbox events in drop from the documents of
// c: each document's outbox is rewritten without them, filtered on the
// version it was read at (FerretDB v1 applies no $pull condition), so a
// write of the document in between — which may add outbox events — is
// never undone; the rewrite is then read and tried again.
func (s *Store) outboxDeleteFrom(ctx context.Context, c *mongo.Collection, drop map[string]bool) error {
	for range outboxRetries {
		docs, err := findAll[outboxHolder](ctx, c, hasOutbox(),
			options.Find().SetProjection(bson.D{{Key: outboxField, Value: 1}, {Key: "version", Value: 1}}))
		if err != nil {
			return err
		}
		lost := false
		for i := range docs {
			d := &docs[i]
			keep := make([]statusEventDoc, 0, len(d.Outbox))
			for _, e := range d.Outbox {
				if !drop[e.ID] {
					keep = append(keep, e)
				}
			}
			if len(keep) == len(d.Outbox) {
				continue
			}
			var set bson.D
			if len(keep) == 0 {
				set = bson.D{{Key: "$unset", Value: bson.D{{Key: outboxField, Value: ""}}}}
			} else {
				set = bson.D{{Key: "$set", Value: bson.D{{Key: outboxField, Value: keep}}}}
			}
			res, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: d.ID}, {Key: "version", Value: d.Version}}, set)
			if err != nil {
				return translate(ctx, err)
			}
			if res.MatchedCount == 0 {
				lost = true
			}
		}
		if !lost {
			return nil
		}
	}
	return fmt.Errorf("outbox rewritten concurrently %d times: %w", outboxRetries, store.ErrConflict)
}

// hasOutbox matches the documents holding at least one outbox event.
func hasOutbox() bson.D {
	return bson.D{{Key: outboxField + "._id", Value: bson.D{{Key: "$exists", Value: true}}}}
}

// OutboxList returns up to limit operational outbox events, oldest first:
// those held by circuits, by subscriptions (auto-disables) and by jobs
// (discards).
func (s *Store) OutboxList(ctx context.Context, limit int) ([]stream.Event, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 100
	}
	// The discarded jobs' events, in the job documents.
	held, err := s.jobOutboxList(ctx, limit)
	if err != nil {
		return nil, fmt.Errorf("list outbox of %s: %w", s.jobs.Name(), err)
	}
	events := make([]stream.Event, 0, len(held))
	for i := range held {
		events = append(events, held[i].asDomain())
	}
	for _, c := range []*mongo.Collection{s.circuits, s.subscriptions} {
		docs, err := findAll[outboxHolder](ctx, c, hasOutbox(), options.Find().SetProjection(bson.D{{Key: outboxField, Value: 1}}))
		if err != nil {
			return nil, fmt.Errorf("list outbox of %s: %w", c.Name(), err)
		}
		for i := range docs {
			for j := range docs[i].Outbox {
				events = append(events, docs[i].Outbox[j].asDomain())
			}
		}
	}
	slices.SortFunc(events, func(a, b stream.Event) int { return strings.Compare(a.ID, b.ID) })
	if len(events) > limit {
		events = events[:limit]
	}
	return events, nil
}

// OutboxDelete removes the operational outbox events with the given ids
// from the documents that hold them.
func (s *Store) OutboxDelete(ctx context.Context, ids []string) error {
	if err := s.check(); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	drop := make(map[string]bool, len(ids))
	for _, id := range ids {
		drop[id] = true
	}
	for _, c := range []*mongo.Collection{s.circuits, s.subscriptions} {
		if err := s.outboxDeleteFrom(ctx, c, drop); err != nil {
			return fmt.Errorf("delete outbox events of %s: %w", c.Name(), err)
		}
	}
	if err := s.jobOutboxDelete(ctx, drop); err != nil {
		return fmt.Errorf("delete outbox events of %s: %w", s.jobs.Name(), err)
	}
	return nil
}
