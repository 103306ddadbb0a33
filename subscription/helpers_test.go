package subscription

import (
	"encoding/json"

	"github.com/hooklane/hooklane/event/cloudevent"
)

// testSub returns a valid ACTIVE subscription bound to codes.
func testSub(code string, sequence int, bindings ...string) *Subscription {
	s := &Subscription{ID: "id-" + code, Code: code, Sequence: sequence, Target: "https://example.com/hook"}
	for _, b := range bindings {
		s.EventTypes = append(s.EventTypes, Binding{EventTypeCode: b})
	}
	s.ApplyDefaults()
	s.Sequence = sequence
	return s
}

// testEvent returns an event of type typ with optional JSON data.
func testEvent(typ string) *cloudevent.Event {
	return &cloudevent.Event{SpecVersion: "1.0", ID: "e1", Source: "/test", Type: typ}
}

func withData(ev *cloudevent.Event, data string) *cloudevent.Event {
	ev.Data = json.RawMessage(data)
	return ev
}

func filter(field, op, value string) Filter {
	return Filter{Field: field, Op: op, Value: json.RawMessage(value)}
}
