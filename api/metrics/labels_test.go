package metrics_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/api/metrics"
	"github.com/hooklane/hooklane/dispatch"
)

func TestMethodAndCodeLabels(t *testing.T) {
	t.Parallel()
	methods := []struct{ in, want string }{
		{"GET", "GET"},
		{"HEAD", "HEAD"},
		{"POST", "POST"},
		{"PUT", "PUT"},
		{"PATCH", "PATCH"},
		{"DELETE", "DELETE"},
		{"OPTIONS", "OPTIONS"},
		{"CONNECT", "CONNECT"},
		{"TRACE", "TRACE"},
		{"get", "other"},
		{"PROPFIND", "other"},
		{"X-1234", "other"},
		{"", "other"},
	}
	for _, tt := range methods {
		require.Equal(t, tt.want, metrics.MethodLabel(tt.in), "method %q", tt.in)
	}
	codes := []struct {
		in   int
		want string
	}{
		{200, "200"},
		{201, "201"},
		{404, "404"},
		{415, "415"},
		{421, "421"},
		{503, "503"},
		{299, "2xx"},
		{499, "4xx"},
		{599, "5xx"},
		{0, "none"},
		{-1, "none"},
		{600, "none"},
		{1 << 20, "none"},
	}
	for _, tt := range codes {
		require.Equal(t, tt.want, metrics.CodeLabel(tt.in), "code %d", tt.in)
	}
}

// TestHTTPLabelsAreClosed: whatever methods clients send and whatever codes
// are written, the HTTP series stay within a closed set.
func TestHTTPLabelsAreClosed(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{})
	for i := range 500 {
		m.ObserveHTTP(fmt.Sprintf("M%d", i), "unmatched", 400+i, time.Millisecond)
	}
	m.ObserveHTTP(http.MethodGet, "/api/events", http.StatusOK, time.Millisecond)
	mfs, err := m.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "hooklane_http_") {
			continue
		}
		// At most: two methods × (the ~60 codes net/http names + 6 classes).
		require.LessOrEqual(t, len(mf.GetMetric()), 2*(60+6), "%s grew with client input", mf.GetName())
		for _, mt := range mf.GetMetric() {
			for _, l := range mt.GetLabel() {
				require.NotRegexp(t, `^M\d+$`, l.GetValue(), "a client's method became a label")
			}
		}
	}
	require.InDelta(t, 500, value(t, m, "hooklane_http_request_duration_seconds", "method", "other"), 0)
	require.InDelta(t, 1, value(t, m, "hooklane_http_requests_total", "method", "GET", "code", "200"), 0)
}

// TestAdminDefinedLabelsAreCapped: event types and pool codes label their
// series up to a cap per process; past it, "other".
func TestAdminDefinedLabelsAreCapped(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{
		TypeKnownFunc: func(context.Context, string) (bool, error) { return true, nil },
		PoolCodeFunc:  func(id string) string { return "pool-" + id },
	})
	for i := range metrics.TypeLabelMax + 50 {
		m.ObserveIngest(t.Context(), fmt.Sprintf("t.%d", i), "accepted", 0)
	}
	for i := range metrics.PoolLabelMax + 50 {
		m.ObserveAttempt(&dispatch.Job{Status: dispatch.StatusCompleted, DispatchPoolID: strconv.Itoa(i)}, dispatch.Outcome{Attempted: true, Attempt: dispatch.Attempt{StatusCode: 200}})
	}
	// A value admitted before the cap keeps its own label.
	m.ObserveIngest(t.Context(), "t.0", "accepted", 0)

	series := func(name string) int {
		mfs, err := m.Registry().Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			if mf.GetName() == name {
				return len(mf.GetMetric())
			}
		}
		return 0
	}
	require.Equal(t, metrics.TypeLabelMax+1, series("hooklane_events_ingested_total"))
	require.InDelta(t, 50, value(t, m, "hooklane_events_ingested_total", "type", "other"), 0)
	require.InDelta(t, 2, value(t, m, "hooklane_events_ingested_total", "type", "t.0"), 0)
	require.Equal(t, metrics.PoolLabelMax+1, series("hooklane_delivery_duration_seconds"))
	require.InDelta(t, 50, value(t, m, "hooklane_delivery_duration_seconds", "pool", "other"), 0)
}
