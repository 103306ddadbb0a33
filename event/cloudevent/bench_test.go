package cloudevent_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hooklane/hooklane/event/cloudevent"
)

func benchEvent() cloudevent.Event {
	return cloudevent.Event{
		SpecVersion: "1.0", ID: "e-12345", Source: "/bench/orders", Type: "ecommerce.order.created", Subject: "order/o-12345",
		Time: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), DataContentType: "application/json",
		Data:       json.RawMessage(`{"order":"o-12345","amount":150.25,"currency":"EUR","pad":"` + strings.Repeat("x", 150) + `"}`),
		Extensions: map[string]any{"messagegroup": "order:o-12345", "correlationid": "c-1", "priority": json.Number("3")},
	}
}

// BenchmarkEventJSON measures the event's JSON encoding (stored events,
// structured deliveries) and decoding (ingest, every read of a stored event).
func BenchmarkEventJSON(b *testing.B) {
	ev := benchEvent()
	raw, err := json.Marshal(ev)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ev.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Unmarshal", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		for b.Loop() {
			var e cloudevent.Event
			if err := e.UnmarshalJSON(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
