package subscription

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
)

func TestApplyDefaults(t *testing.T) {
	t.Parallel()
	var s Subscription
	s.ApplyDefaults()
	require.Equal(t, Subscription{
		Mode:           dispatch.ModeImmediate,
		Delivery:       dispatch.DeliveryPush,
		TimeoutSeconds: 30,
		MaxAgeSeconds:  86400,
		DelaySeconds:   0,
		Sequence:       99,
		DataOnly:       false,
		Retry:          dispatch.Retry{MaxAttempts: 8, InitialBackoffSeconds: 5, MaxBackoffSeconds: 3600},
		Status:         StatusActive,
	}, s)

	// Given values stay.
	g := Subscription{
		Mode: dispatch.ModeBlockOnError, TimeoutSeconds: 5, Sequence: 3,
		Retry: dispatch.Retry{MaxAttempts: 2}, Status: StatusPaused, Delivery: dispatch.DeliveryPull,
	}
	g.ApplyDefaults()
	require.Equal(t, dispatch.ModeBlockOnError, g.Mode)
	require.Equal(t, 5, g.TimeoutSeconds)
	require.Equal(t, 3, g.Sequence)
	require.Equal(t, dispatch.Retry{MaxAttempts: 2, InitialBackoffSeconds: 5, MaxBackoffSeconds: 3600}, g.Retry)
	require.Equal(t, StatusPaused, g.Status)
	require.Equal(t, dispatch.DeliveryPull, g.Delivery)
}

// TestApplyDefaultsThenUnmarshal shows the documented way to keep explicit
// zeros: defaults first, then the body on top.
func TestApplyDefaultsThenUnmarshal(t *testing.T) {
	t.Parallel()
	var s Subscription
	s.ApplyDefaults()
	require.NoError(t, json.Unmarshal([]byte(`{"code": "c", "sequence": 0, "timeoutSeconds": 0,
		"retry": {"maxAttempts": 3}}`), &s))
	require.Equal(t, 0, s.Sequence)
	require.Equal(t, dispatch.Retry{MaxAttempts: 3, InitialBackoffSeconds: 5, MaxBackoffSeconds: 3600}, s.Retry)
	require.Equal(t, 86400, s.MaxAgeSeconds)
	require.Contains(t, pointers(s.Validate()), "/timeoutSeconds")
}

func pointers(errs []FieldError) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Pointer
	}
	return out
}

func TestValidate(t *testing.T) {
	t.Parallel()
	valid := func() *Subscription {
		s := &Subscription{
			Code: "order-processor",
			EventTypes: []Binding{
				{EventTypeCode: "ecommerce:orders:order:created", SpecVersion: "1.1"},
				{EventTypeCode: "ecommerce:orders:*"},
			},
			Filters: []Filter{
				filter("region", "eq", `"us-west"`),
				filter("data.amount", "gte", `100`),
			},
			Target:       "https://receiver.example.com/hooks/orders",
			Headers:      map[string]string{"X-Team": "orders"},
			CustomConfig: []KeyValue{{Key: "k", Value: "v"}},
		}
		s.ApplyDefaults()
		return s
	}
	require.Empty(t, valid().Validate())

	tests := []struct {
		name   string
		mutate func(s *Subscription)
		want   []string
	}{
		{"no code", func(s *Subscription) { s.Code = "" }, []string{"/code"}},
		{"code with space", func(s *Subscription) { s.Code = "order processor" }, []string{"/code"}},
		{"code too long", func(s *Subscription) { s.Code = strings.Repeat("a", 129) }, []string{"/code"}},
		{"no bindings", func(s *Subscription) { s.EventTypes = nil }, []string{"/eventTypes"}},
		{
			"bad pattern", func(s *Subscription) { s.EventTypes[1].EventTypeCode = "ecommerce:order*" },
			[]string{"/eventTypes/1/eventTypeCode"},
		},
		{
			"bad spec version", func(s *Subscription) { s.EventTypes[0].SpecVersion = "1" },
			[]string{"/eventTypes/0/specVersion"},
		},
		{"bad filter op", func(s *Subscription) { s.Filters[1].Op = "between" }, []string{"/filters/1/op"}},
		{"bad filter field", func(s *Subscription) { s.Filters[0].Field = "data." }, []string{"/filters/0/field"}},
		{"bad filter value", func(s *Subscription) { s.Filters[0].Op = OpIn }, []string{"/filters/0/value"}},
		{"no target", func(s *Subscription) { s.Target = "" }, []string{"/target", "/destination"}},
		{"pull needs no target", func(s *Subscription) { s.Target = ""; s.Delivery = dispatch.DeliveryPull }, nil},
		{"ftp target", func(s *Subscription) { s.Target = "ftp://example.com/x" }, []string{"/target"}},
		{"relative target", func(s *Subscription) { s.Target = "/hooks" }, []string{"/target"}},
		{"no host", func(s *Subscription) { s.Target = "https:///x" }, []string{"/target"}},
		{"bad port", func(s *Subscription) { s.Target = "https://example.com:99999/x" }, []string{"/target"}},
		{
			"bad header name", func(s *Subscription) { s.Headers = map[string]string{"X/Team": "a"} },
			[]string{"/headers/X~1Team"},
		},
		{"reserved header", func(s *Subscription) {
			s.Headers = map[string]string{"Webhook-Signature": "v1,x", "X-A": "b", "content-type": "text/plain"}
		}, []string{"/headers/Webhook-Signature", "/headers/content-type"}},
		{
			"header value newline", func(s *Subscription) { s.Headers = map[string]string{"X-A": "a\r\nB: c"} },
			[]string{"/headers/X-A"},
		},
		// Issue 21 class 3: every control character but the tab makes the
		// HTTP client refuse the request, so every delivery would fail.
		{"header values with control characters", func(s *Subscription) {
			s.Headers = map[string]string{"X-Bell": "a\x07", "X-Del": "tok\x7f", "X-Esc": "\x1b[0m", "X-Tab": "a\tb", "X-Utf8": "straße"}
		}, []string{"/headers/X-Bell", "/headers/X-Del", "/headers/X-Esc"}},
		{
			"header name with non-ASCII", func(s *Subscription) { s.Headers = map[string]string{"X-Straße": "a"} },
			[]string{"/headers/X-Straße"},
		},
		{"empty header name", func(s *Subscription) { s.Headers = map[string]string{"": "a"} }, []string{"/headers/"}},
		{"bad mode", func(s *Subscription) { s.Mode = "FAST" }, []string{"/mode"}},
		{"bad delivery", func(s *Subscription) { s.Delivery = "email" }, []string{"/delivery"}},
		{"timeout above max", func(s *Subscription) { s.TimeoutSeconds = 301 }, []string{"/timeoutSeconds"}},
		{"timeout at max", func(s *Subscription) { s.TimeoutSeconds = 300 }, nil},
		{"timeout negative", func(s *Subscription) { s.TimeoutSeconds = -1 }, []string{"/timeoutSeconds"}},
		{"max age zero", func(s *Subscription) { s.MaxAgeSeconds = 0 }, []string{"/maxAgeSeconds"}},
		{"negative delay", func(s *Subscription) { s.DelaySeconds = -5 }, []string{"/delaySeconds"}},
		{"max attempts zero", func(s *Subscription) { s.Retry.MaxAttempts = 0 }, []string{"/retry/maxAttempts"}},
		{
			"initial backoff zero", func(s *Subscription) { s.Retry.InitialBackoffSeconds = 0 },
			[]string{"/retry/initialBackoffSeconds"},
		},
		{
			"max below initial", func(s *Subscription) { s.Retry.MaxBackoffSeconds = 4 },
			[]string{"/retry/maxBackoffSeconds"},
		},
		{"bad status", func(s *Subscription) { s.Status = "DELETED" }, []string{"/status"}},
		{"empty custom key", func(s *Subscription) { s.CustomConfig[0].Key = "" }, []string{"/customConfig/0/key"}},
		{
			"several", func(s *Subscription) { s.Code = ""; s.TimeoutSeconds = 1000; s.Filters[1].Op = "" },
			[]string{"/code", "/filters/1/op", "/timeoutSeconds"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := valid()
			tt.mutate(s)
			errs := s.Validate()
			if tt.want == nil {
				require.Empty(t, errs)
				return
			}
			require.Equal(t, tt.want, pointers(errs))
			for _, e := range errs {
				require.NotEmpty(t, e.Message)
			}
		})
	}
}
