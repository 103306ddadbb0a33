package mongostore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
)

// eventDoc is an eventlog.Event as stored.
type eventDoc struct {
	ID            string    `bson:"_id"`
	ReceivedAt    time.Time `bson:"receivedAt"`
	DedupKey      string    `bson:"dedupKey"`
	Event         ceDoc     `bson:"event"`
	SchemaVersion string    `bson:"schemaVersion"`
	// FannedOutAt is null (never absent) until the fan-out is done; see
	// indexes().
	FannedOutAt *time.Time `bson:"fannedOutAt"`
}

// ceDoc is a cloudevent.Event as stored.
type ceDoc struct {
	SpecVersion     string    `bson:"specversion"`
	ID              string    `bson:"id"`
	Source          string    `bson:"source"`
	Type            string    `bson:"type"`
	Subject         string    `bson:"subject"`
	Time            time.Time `bson:"time"`
	DataContentType string    `bson:"datacontenttype"`
	DataSchema      string    `bson:"dataschema"`
	// Data is the raw JSON, kept byte for byte.
	Data []byte `bson:"data"`
	// DataBase64 is binary data; null when absent.
	DataBase64 []byte `bson:"dataBase64"`
	// Ext is the extensions as a JSON object, so their JSON types (string,
	// bool, number of any precision) come back exactly; null when absent.
	Ext []byte `bson:"ext"`
	// ExtStr maps each extension to its string form, for the string
	// equality filters of EventList. Only valid extension names (lower-case
	// letters and digits, which ingest enforces) are kept: they are field
	// names here, where "." and "$" are not allowed.
	ExtStr map[string]string `bson:"extStr,omitempty"`
}

func toEventDoc(e *event.Event) (*eventDoc, error) {
	ce := &e.Event
	d := &eventDoc{
		ID:            e.ID,
		ReceivedAt:    ms(e.ReceivedAt),
		DedupKey:      e.DedupKey,
		SchemaVersion: e.SchemaVersion,
		FannedOutAt:   msPtr(e.FannedOutAt),
		Event: ceDoc{
			SpecVersion:     ce.SpecVersion,
			ID:              ce.ID,
			Source:          ce.Source,
			Type:            ce.Type,
			Subject:         ce.Subject,
			Time:            ms(ce.Time),
			DataContentType: ce.DataContentType,
			DataSchema:      ce.DataSchema,
			Data:            ce.Data,
			DataBase64:      ce.DataBase64,
		},
	}
	if ce.Extensions != nil {
		ext, err := json.Marshal(ce.Extensions)
		if err != nil {
			return nil, fmt.Errorf("encode extensions of event %s: %w", e.ID, err)
		}
		d.Event.Ext = ext
		d.Event.ExtStr = make(map[string]string, len(ce.Extensions))
		for k := range ce.Extensions {
			if validExtName(k) {
				d.Event.ExtStr[k] = ce.Ext(k)
			}
		}
	}
	return d, nil
}

func (d *eventDoc) asDomain() (*event.Event, error) {
	c := &d.Event
	e := &event.Event{
		ID:            d.ID,
		ReceivedAt:    utc(d.ReceivedAt),
		DedupKey:      d.DedupKey,
		SchemaVersion: d.SchemaVersion,
		FannedOutAt:   utcPtr(d.FannedOutAt),
		Event: cloudevent.Event{
			SpecVersion:     c.SpecVersion,
			ID:              c.ID,
			Source:          c.Source,
			Type:            c.Type,
			Subject:         c.Subject,
			Time:            utc(c.Time),
			DataContentType: c.DataContentType,
			DataSchema:      c.DataSchema,
			Data:            c.Data,
			DataBase64:      c.DataBase64,
		},
	}
	if c.Ext != nil {
		dec := json.NewDecoder(bytes.NewReader(c.Ext))
		dec.UseNumber()
		if err := dec.Decode(&e.Event.Extensions); err != nil {
			return nil, fmt.Errorf("decode extensions of event %s: %w", d.ID, err)
		}
	}
	return e, nil
}
