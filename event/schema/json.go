package schema

import (
	"encoding/json"

	"github.com/hooklane/hooklane/event/cloudevent"
)

// MarshalJSON renders the event type with timestamps in the gateway's format
// and its versions as [] when it has none.
func (t EventType) MarshalJSON() ([]byte, error) {
	type plain EventType
	p := plain(t)
	if p.Versions == nil {
		p.Versions = []Version{}
	}
	return json.Marshal(struct { //nolint:wrapcheck // plain data
		plain
		CreatedAt cloudevent.Timestamp `json:"createdAt"`
		UpdatedAt cloudevent.Timestamp `json:"updatedAt"`
	}{plain: p, CreatedAt: cloudevent.Timestamp(t.CreatedAt), UpdatedAt: cloudevent.Timestamp(t.UpdatedAt)})
}

// MarshalJSON renders the version with timestamps in the gateway's format.
func (v Version) MarshalJSON() ([]byte, error) {
	type plain Version
	return json.Marshal(struct { //nolint:wrapcheck // plain data
		plain
		CreatedAt cloudevent.Timestamp `json:"createdAt"`
		UpdatedAt cloudevent.Timestamp `json:"updatedAt"`
	}{plain: plain(v), CreatedAt: cloudevent.Timestamp(v.CreatedAt), UpdatedAt: cloudevent.Timestamp(v.UpdatedAt)})
}
