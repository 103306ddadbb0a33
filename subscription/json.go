package subscription

import (
	"encoding/json"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event/cloudevent"
)

// MarshalJSON renders the subscription in the API's form, timestamps in the
// gateway's format, empty lists as [] (never null) and the write-only
// secrets of auth and tls as "***", and the destination as the Service
// masked it (its type only when the Service did not: a destination is
// never shown with its secrets).
func (s Subscription) MarshalJSON() ([]byte, error) {
	type plain Subscription
	p := plain(s)
	p.Auth, p.TLS = s.Auth.Masked(), s.TLS.Masked()
	if s.HasDestination() {
		p.Destination = s.destinationView
		if p.Destination == nil {
			p.Destination = typeOnlyView(s.DestinationType())
		}
	}
	if p.EventTypes == nil {
		p.EventTypes = []Binding{}
	}
	if p.Filters == nil {
		p.Filters = []Filter{}
	}
	if p.Headers == nil {
		p.Headers = map[string]string{}
	}
	if p.CustomConfig == nil {
		p.CustomConfig = []KeyValue{}
	}
	circuit := s.Circuit
	if circuit == nil && s.Delivery != dispatch.DeliveryPull {
		circuit = &dispatch.CircuitView{State: dispatch.CircuitClosed}
	}
	return json.Marshal(struct { //nolint:wrapcheck // plain data
		plain
		StatusReason *string               `json:"statusReason"`
		Circuit      *dispatch.CircuitView `json:"circuit"`
		CreatedAt    cloudevent.Timestamp  `json:"createdAt"`
		UpdatedAt    cloudevent.Timestamp  `json:"updatedAt"`
	}{
		plain: p, StatusReason: s.StatusReason, Circuit: circuit,
		CreatedAt: cloudevent.Timestamp(s.CreatedAt), UpdatedAt: cloudevent.Timestamp(s.UpdatedAt),
	})
}

// MarshalJSON renders the secret with its expiry in the gateway's format.
func (s Secret) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct { //nolint:wrapcheck // plain data
		Value     string                `json:"secret"`
		ExpiresAt *cloudevent.Timestamp `json:"expiresAt"`
	}{Value: s.Value, ExpiresAt: cloudevent.TimestampPtr(s.ExpiresAt)})
}
