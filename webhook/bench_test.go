package webhook_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/subscription"
	"github.com/hooklane/hooklane/webhook"
)

// BenchmarkSign measures the webhook signature (HMAC-SHA256, Standard
// Webhooks) of a 256-byte and a 4 KiB body, with one key and with two
// (during a secret rotation).
func BenchmarkSign(b *testing.B) {
	key1, err := subscription.SecretKey(subscription.NewSecret())
	if err != nil {
		b.Fatal(err)
	}
	key2, err := subscription.SecretKey(subscription.NewSecret())
	if err != nil {
		b.Fatal(err)
	}
	ts := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		keys [][]byte
		body int
	}{
		{"key1/256B", [][]byte{key1}, 256},
		{"key1/4KiB", [][]byte{key1}, 4096},
		{"key2/256B", [][]byte{key1, key2}, 256},
	} {
		b.Run(tc.name, func(b *testing.B) {
			body := []byte(strings.Repeat("x", tc.body))
			b.SetBytes(int64(tc.body))
			b.ReportAllocs()
			for b.Loop() {
				if sig := webhook.Sign(tc.keys, "01JDBENCHJOB", ts, body); !strings.HasPrefix(sig, "v1,") {
					b.Fatal(sig)
				}
			}
		})
	}
}

// BenchmarkRequest measures rendering one signed delivery request
// (body, headers, signature) of a structured event, no network.
func BenchmarkRequest(b *testing.B) {
	m := webhook.New(webhook.Config{AllowPrivateTargets: true, UserAgent: "hooklane/bench"})
	defer m.Close()
	d := &router.Delivery{
		Job: eventJob(), Event: storedEvent(), Attempt: 1,
		Subscription: &subscription.Subscription{Secrets: []subscription.Secret{{Value: subscription.NewSecret()}}},
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		req, err := m.Request(ctx, d)
		if err != nil || req.Header.Get("webhook-signature") == "" {
			b.Fatalf("request: %v", err)
		}
	}
}
