package webhook_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/destination/endpoint/endpointtest"
	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/router/webhook"
	"github.com/hooklane/hooklane/subscription"
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

// BenchmarkDeliver measures one whole delivery (render, sign,
// authenticate, POST over a kept-alive loopback connection, classify) for
// each endpoint auth of API.md §14 against none: over http without auth,
// with a bearer token, basic credentials and an OAuth 2.0 token (cached:
// the token endpoint is called once), and over https with the CA only
// against mutual TLS (the TLS configuration's transport is looked up by
// hash on every delivery).
func BenchmarkDeliver(b *testing.B) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer plain.Close()
	var tokenRequests atomic.Int32
	tokenSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		tokenRequests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"bench-token","token_type":"Bearer","expires_in":3600}`))
	}))
	defer tokenSrv.Close()
	pki := endpointtest.NewPKI(b)
	secure := pki.NewServer(b, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }), false)
	mutual := pki.NewServer(b, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }), true)

	for _, tc := range []struct {
		name   string
		target string
		auth   *endpoint.Auth
		tls    *endpoint.TLS
	}{
		{"none", plain.URL, nil, nil},
		{"bearer", plain.URL, &endpoint.Auth{Type: endpoint.AuthBearer, Token: "bench-bearer"}, nil},
		{"basic", plain.URL, &endpoint.Auth{Type: endpoint.AuthBasic, Username: "bench", Password: "bench-password"}, nil},
		{"oauth2", plain.URL, &endpoint.Auth{Type: endpoint.AuthOAuth2, TokenURL: tokenSrv.URL, ClientID: "bench", ClientSecret: "bench-secret"}, nil},
		{"https-ca", secure.URL, nil, &endpoint.TLS{CACertificate: pki.CACertificate}},
		{"https-mtls", mutual.URL, nil, pki.ClientTLS()},
	} {
		b.Run(tc.name, func(b *testing.B) {
			hooks := webhook.New(webhook.Config{AllowPrivateTargets: true, UserAgent: "hooklane/bench"})
			defer hooks.Close()
			d := subDelivery(tc.target, tc.auth, tc.tls)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if out := hooks.Deliver(ctx, d); out.Err != nil {
					b.Fatalf("deliver: %v", out.Err)
				}
			}
		})
	}
	if n := tokenRequests.Load(); n != 1 {
		b.Fatalf("the oauth2 sub-benchmark requested %d tokens, want 1", n)
	}
}
