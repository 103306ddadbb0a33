package transform

import (
	"encoding/json"
	"testing"
	"time"
)

// benchTimeout keeps a loaded machine (whose scheduler may hold a run's
// goroutine for longer than the default 100ms) from failing a benchmark.
const benchTimeout = 10 * time.Second

// benchEvent is a CloudEvent of about 1 KB, as the router hands it over.
const benchEvent = `{"specversion":"1.0","id":"01J9ZK3V7Q8R2T4W6Y8A0C2E4G","source":"/shop/eu-west-1/orders",` +
	`"type":"shop.order.created","subject":"orders/o-1042","time":"2026-10-01T12:34:56.789Z",` +
	`"datacontenttype":"application/json","data":{"orderId":"o-1042","status":"created","currency":"EUR",` +
	`"total":129.95,"tax":21.65,"customer":{"id":"c-77","name":"Ada Lovelace","email":"ada@example.com",` +
	`"address":{"street":"12 Analytical Row","city":"London","zip":"NW1 6XE","country":"GB"}},` +
	`"items":[{"sku":"SKU-001","name":"Difference engine gear","qty":2,"price":19.99},` +
	`{"sku":"SKU-002","name":"Punched card deck","qty":1,"price":49.99},` +
	`{"sku":"SKU-003","name":"Brass crank","qty":3,"price":13.33}],` +
	`"shipping":{"method":"express","carrier":"DHL","eta":"2026-10-03"},` +
	`"notes":"Leave at the reception desk; call ahead if the gate is closed.","tags":["priority","gift","eu"]}}`

// benchRename renames a few fields: the typical transformation.
const benchRename = `function handler(webhook) {
	var d = webhook.payload.data;
	webhook.payload = {order_id: d.orderId, state: d.status, amount: d.total, currency: d.currency,
		customer_email: d.customer.email, lines: d.items.length, event: webhook.eventType};
	webhook.headers["x-order"] = d.orderId;
	return webhook;
}`

func benchInput() Input {
	return Input{
		Method: "POST", URL: "https://receiver.example.com/hooks", Headers: map[string]string{"x-team": "orders"},
		Payload: json.RawMessage(benchEvent), EventType: "shop.order.created", EventID: "01J9ZK3V7Q8R2T4W6Y8A0C2E4G", Attempt: 1,
	}
}

// BenchmarkRun measures one delivery's transformation: pooled is the
// engine as deliveries use it, fresh makes a new locked-down runtime for
// every run (the isolation strategy not taken).
func BenchmarkRun(b *testing.B) {
	prog, err := Compile(benchRename)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name  string
		fresh bool
	}{{"pooled", false}, {"fresh", true}} {
		b.Run(bc.name, func(b *testing.B) {
			e := New(Config{Timeout: benchTimeout})
			e.fresh = bc.fresh
			in := benchInput()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Run(b.Context(), prog, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRunParallel is the pooled engine under concurrent deliveries.
func BenchmarkRunParallel(b *testing.B) {
	prog, err := Compile(benchRename)
	if err != nil {
		b.Fatal(err)
	}
	e := New(Config{Timeout: benchTimeout})
	in := benchInput()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := e.Run(b.Context(), prog, in); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkCache is the delivery's lookup of its compiled program: a hit,
// and a miss (a compile).
func BenchmarkCache(b *testing.B) {
	b.Run("hit", func(b *testing.B) {
		c := NewCache(0)
		key := CacheKey{SubscriptionID: "sub-1", Version: "7"}
		if _, err := c.Program(key, benchRename); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Program(key, benchRename); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("compile", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Compile(benchRename); err != nil {
				b.Fatal(err)
			}
		}
	})
}
