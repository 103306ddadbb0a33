package mongostore

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/store"
)

// eventTypeDoc is a schema.EventType as stored; its _id is the code, which
// makes the code unique without another index.
type eventTypeDoc struct {
	Code        string       `bson:"_id"` //nolint:tagliatelle // the code is the primary key, which MongoDB names _id
	Name        string       `bson:"name"`
	Description string       `bson:"description"`
	Status      string       `bson:"status"`
	Versions    []versionDoc `bson:"versions"`
	CreatedAt   time.Time    `bson:"createdAt"`
	UpdatedAt   time.Time    `bson:"updatedAt"`
	Revision    int64        `bson:"revision"`
}

type versionDoc struct {
	Version    string `bson:"version"`
	SchemaType string `bson:"schemaType"`
	MimeType   string `bson:"mimeType"`
	// Schema is the JSON Schema, byte for byte.
	Schema    []byte    `bson:"schema"`
	Status    string    `bson:"status"`
	CreatedAt time.Time `bson:"createdAt"`
	UpdatedAt time.Time `bson:"updatedAt"`
}

func toEventTypeDoc(t *schema.EventType) *eventTypeDoc {
	return &eventTypeDoc{
		Code:        t.Code,
		Name:        t.Name,
		Description: t.Description,
		Status:      string(t.Status),
		Versions: mapSlice(t.Versions, func(v *schema.Version) versionDoc {
			return versionDoc{
				Version:    v.Version,
				SchemaType: v.SchemaType,
				MimeType:   v.MimeType,
				Schema:     v.Schema,
				Status:     string(v.Status),
				CreatedAt:  ms(v.CreatedAt),
				UpdatedAt:  ms(v.UpdatedAt),
			}
		}),
		CreatedAt: ms(t.CreatedAt),
		UpdatedAt: ms(t.UpdatedAt),
		Revision:  t.Revision,
	}
}

func (d *eventTypeDoc) asDomain() *schema.EventType {
	return &schema.EventType{
		Code:        d.Code,
		Name:        d.Name,
		Description: d.Description,
		Status:      schema.TypeStatus(d.Status),
		Versions: mapSlice(d.Versions, func(v *versionDoc) schema.Version {
			return schema.Version{
				Version:    v.Version,
				SchemaType: v.SchemaType,
				MimeType:   v.MimeType,
				Schema:     v.Schema,
				Status:     schema.VersionStatus(v.Status),
				CreatedAt:  utc(v.CreatedAt),
				UpdatedAt:  utc(v.UpdatedAt),
			}
		}),
		CreatedAt: utc(d.CreatedAt),
		UpdatedAt: utc(d.UpdatedAt),
		Revision:  d.Revision,
	}
}

// EventTypeInsert stores a new type at revision 1 (set on t too);
// store.ErrConflict when the code exists.
func (s *Store) EventTypeInsert(ctx context.Context, t *schema.EventType) error {
	if err := s.check(); err != nil {
		return err
	}
	doc := toEventTypeDoc(t)
	doc.Revision = 1
	if _, err := s.eventTypes.InsertOne(ctx, doc); err != nil {
		return fmt.Errorf("insert event type %s: %w", t.Code, translate(ctx, err))
	}
	t.Revision = 1
	if err := s.bumpGeneration(ctx, genEventTypes); err != nil {
		return fmt.Errorf("insert event type %s: %w", t.Code, err)
	}
	return nil
}

// EventTypeGet returns one type by code; store.ErrNotFound when there is
// none.
func (s *Store) EventTypeGet(ctx context.Context, code string) (*schema.EventType, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var doc eventTypeDoc
	if err := s.eventTypes.FindOne(ctx, bson.D{{Key: "_id", Value: code}}).Decode(&doc); err != nil {
		return nil, fmt.Errorf("get event type %s: %w", code, translate(ctx, err))
	}
	return doc.asDomain(), nil
}

// EventTypeList returns one page of types ordered by code; the cursor is the
// last code of the previous page.
func (s *Store) EventTypeList(ctx context.Context, p *schema.ListParams) (*schema.Page, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	filter := bson.D{}
	if p.Status != "" {
		filter = append(filter, bson.E{Key: "status", Value: string(p.Status)})
	}
	idCond := bson.D{}
	if p.Prefix != "" {
		idCond = append(idCond, bson.E{Key: "$regex", Value: "^" + regexp.QuoteMeta(p.Prefix)})
	}
	if p.Cursor != "" {
		idCond = append(idCond, bson.E{Key: "$gt", Value: p.Cursor})
	}
	if len(idCond) > 0 {
		filter = append(filter, bson.E{Key: "_id", Value: idCond})
	}
	limit := pageLimit(p.Limit)
	docs, err := findAll[eventTypeDoc](ctx, s.eventTypes, filter, options.Find().
		SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(int64(limit+1)))
	if err != nil {
		return nil, fmt.Errorf("list event types: %w", err)
	}
	page := &schema.Page{}
	if len(docs) > limit {
		docs = docs[:limit]
		page.NextCursor = docs[limit-1].Code
	}
	page.EventTypes = make([]*schema.EventType, len(docs))
	for i := range docs {
		page.EventTypes[i] = docs[i].asDomain()
	}
	return page, nil
}

// EventTypeUpdate replaces the stored type when its revision equals
// t.Revision (guarded like JobUpdate: see replaceVersioned), then sets t.Revision to the new one;
// store.ErrConflict when the revision moved on, store.ErrNotFound when the
// type is gone.
func (s *Store) EventTypeUpdate(ctx context.Context, t *schema.EventType) error {
	if err := s.check(); err != nil {
		return err
	}
	doc := toEventTypeDoc(t)
	doc.Revision = t.Revision + 1
	if err := s.replaceVersioned(ctx, s.eventTypes, t.Code, "revision", t.Revision, doc); err != nil {
		return fmt.Errorf("update event type %s at revision %d: %w", t.Code, t.Revision, err)
	}
	t.Revision = doc.Revision
	if err := s.bumpGeneration(ctx, genEventTypes); err != nil {
		return fmt.Errorf("update event type %s: %w", t.Code, err)
	}
	return nil
}

// EventTypeDelete removes a type; store.ErrNotFound when there is none.
func (s *Store) EventTypeDelete(ctx context.Context, code string) error {
	if err := s.check(); err != nil {
		return err
	}
	res, err := s.eventTypes.DeleteOne(ctx, bson.D{{Key: "_id", Value: code}})
	if err != nil {
		return fmt.Errorf("delete event type %s: %w", code, translate(ctx, err))
	}
	if res.DeletedCount == 0 {
		return fmt.Errorf("delete event type %s: %w", code, store.ErrNotFound)
	}
	if err := s.bumpGeneration(ctx, genEventTypes); err != nil {
		return fmt.Errorf("delete event type %s: %w", code, err)
	}
	return nil
}

// EventTypeGeneration returns a number that grows on every write of any
// event type (by any instance); 0 before the first.
func (s *Store) EventTypeGeneration(ctx context.Context) (int64, error) {
	return s.generation(ctx, genEventTypes)
}
