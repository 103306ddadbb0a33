package ingest_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/ingest"
	"github.com/hooklane/hooklane/subscription"
)

// benchData is an event's data of about 256 bytes, as `hooklane bench` sends.
var benchData = `{"order":"o-12345","amount":150.25,"currency":"EUR","customer":{"id":"c-987","region":"us-west"},"pad":"` + //nolint:gochecknoglobals // read-only test fixture
	strings.Repeat("x", 120) + `"}`

func benchEventJSON(i int) string {
	return fmt.Sprintf(`{"specversion":"1.0","id":"e-%d","source":"/bench/orders","type":"ecommerce.order.created",`+
		`"subject":"order/o-12345","time":"2026-11-22T10:00:00Z","messagegroup":"order:o-12345","data":%s}`, i, benchData)
}

// BenchmarkParse measures ingest.Parse in each HTTP content mode: one
// structured event, one binary event, and batches of 10 and 100 (the cost
// is per request; divide by the batch size for the cost per event).
func BenchmarkParse(b *testing.B) {
	batch := func(n int) string {
		items := make([]string, n)
		for i := range items {
			items[i] = benchEventJSON(i)
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	binary := http.Header{}
	binary.Set("Content-Type", "application/json")
	for k, v := range map[string]string{
		"ce-specversion": "1.0", "ce-id": "e-1", "ce-source": "/bench/orders", "ce-type": "ecommerce.order.created",
		"ce-subject": "order/o-12345", "ce-time": "2026-11-22T10:00:00Z", "ce-messagegroup": "order:o-12345",
	} {
		binary.Set(k, v)
	}
	structured := http.Header{}
	structured.Set("Content-Type", ingest.ContentTypeStructured)
	batched := http.Header{}
	batched.Set("Content-Type", ingest.ContentTypeBatch)
	for _, tc := range []struct {
		name   string
		header http.Header
		body   string
		events int
	}{
		{"structured", structured, benchEventJSON(1), 1},
		{"binary", binary, benchData, 1},
		{"batch10", batched, batch(10), 10},
		{"batch100", batched, batch(100), 100},
	} {
		b.Run(tc.name, func(b *testing.B) {
			body := []byte(tc.body)
			req := &http.Request{Method: http.MethodPost, Header: tc.header, ContentLength: int64(len(body))}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				req.Body = io.NopCloser(bytes.NewReader(body))
				r, err := ingest.Parse(req, ingest.Limits{})
				if err != nil || len(r.Events) != tc.events {
					b.Fatalf("parse: %v", err)
				}
			}
		})
	}
}

// BenchmarkNewJobs measures job building: the jobs of one event for 1, 10
// and 100 matching subscriptions (fan-out), as ingest builds them.
func BenchmarkNewJobs(b *testing.B) {
	received := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	ev := &event.Event{ID: "01JDBENCHEVENT0000000000000", ReceivedAt: received, DedupKey: "/bench\x00e-1"}
	req := &http.Request{Method: http.MethodPost, Header: http.Header{"Content-Type": {ingest.ContentTypeStructured}}}
	body := []byte(benchEventJSON(1))
	req.Body = io.NopCloser(bytes.NewReader(body))
	parsed, err := ingest.Parse(req, ingest.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	ev.Event = parsed.Events[0]
	for _, n := range []int{1, 10, 100} {
		subs := make([]*subscription.Subscription, n)
		for i := range subs {
			subs[i] = &subscription.Subscription{
				ID: fmt.Sprintf("01JDBENCHSUB%014d", i), Code: fmt.Sprintf("sub-%d", i),
				Target: "https://receiver.example.com/hooks", Status: subscription.StatusActive,
			}
		}
		b.Run(fmt.Sprintf("subs%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, s := range subs {
					j := dispatch.NewEventJob(ev, s.JobSettings(), received)
					if j.EventID != ev.ID {
						b.Fatal("job of another event")
					}
				}
			}
		})
	}
}

// BenchmarkParseHostile measures what a hostile request costs before it is
// refused (issue 21): one 1 MiB event of some 80,000 extension attributes,
// and a 9 MiB batch of nine such events. Either is refused (422) after one
// scan of its bytes, without decoding the members.
func BenchmarkParseHostile(b *testing.B) {
	var ev strings.Builder
	ev.WriteString(`{"specversion":"1.0","id":"x","source":"/s","type":"a.b"`)
	for i := 0; ev.Len() < 1<<20-100; i++ {
		fmt.Fprintf(&ev, `,"e%d":"v"`, i)
	}
	ev.WriteString(`}`)
	items := make([]string, 9)
	for i := range items {
		items[i] = ev.String()
	}
	for _, tc := range []struct {
		name, contentType, body string
	}{
		{"extensions1MiB", ingest.ContentTypeStructured, ev.String()},
		{"batch9MiB", ingest.ContentTypeBatch, "[" + strings.Join(items, ",") + "]"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			body := []byte(tc.body)
			req := &http.Request{Method: http.MethodPost, Header: http.Header{"Content-Type": {tc.contentType}}, ContentLength: int64(len(body))}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				req.Body = io.NopCloser(bytes.NewReader(body))
				_, err := ingest.Parse(req, ingest.Limits{})
				var ie *ingest.Error
				if err != nil && !errors.As(err, &ie) {
					b.Fatalf("parse: %v", err)
				}
			}
		})
	}
}
