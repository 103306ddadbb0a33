package schema_test

import (
	"errors"
	"testing"

	"github.com/hooklane/hooklane/event/schema"
)

// BenchmarkRegistryValidate is the per-event cost of schema validation
// once the type and its compiled schema are cached: a valid event, one
// with three violations (errors are built, flattened and sorted), and one
// whose amount has a huge exponent (refused before the validator, which
// would compute 10^999999 for the minimum keyword).
func BenchmarkRegistryValidate(b *testing.B) {
	st := &memStore{types: map[string]*schema.EventType{"shop.order.created": orderType()}}
	r := schema.NewRegistry(schema.RegistryConfig{Store: st})
	for _, tc := range []struct {
		name, data string
		valid      bool
	}{
		{"valid", `{"amount":10.5,"currency":"EUR","email":"a@example.com","at":"2026-01-02T03:04:05Z","lines":[{"sku":"A-1"},{"sku":"B-2"}]}`, true},
		{"three_violations", `{"amount":"10","currency":"GBP","note":1}`, false},
		{"huge_exponent", `{"amount":-1e999999,"currency":"EUR"}`, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ev := event("shop.order.created", "", tc.data)
			_, err := r.Validate(b.Context(), ev)
			var rej *schema.Rejection
			if tc.valid != (err == nil) || (!tc.valid && !errors.As(err, &rej)) {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				_, _ = r.Validate(b.Context(), ev)
			}
		})
	}
}

// BenchmarkCompile is the cost of compiling a schema (at registration, and
// once per (code, version) and instance after a change).
func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := schema.Compile("shop.order.created", "1.0", []byte(orderSchema)); err != nil {
			b.Fatal(err)
		}
	}
}
