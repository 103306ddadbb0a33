package metrics_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/api/metrics"
	"github.com/hooklane/hooklane/subscription/transform"
)

// scrape returns the text /metrics serves.
func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// Runs are counted by outcome, failures by kind (a kind outside the closed
// set counts as throw), and every run's duration is in the histogram.
func TestTransformMetrics(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{})
	tr := m.NewTransform()
	before := scrape(t, m)
	require.Contains(t, before, `hooklane_transform_failures_total{kind="memory"} 0`, "every kind exists from the start")
	require.Contains(t, before, `hooklane_transform_runs_total{outcome="ok"} 0`)

	tr.ObserveRun("", false, 300*time.Microsecond)
	tr.ObserveRun("", false, 2*time.Millisecond)
	tr.ObserveRun("", true, time.Millisecond)
	tr.ObserveRun(transform.KindThrow, false, time.Millisecond)
	tr.ObserveRun(transform.KindTimeout, false, 100*time.Millisecond)
	tr.ObserveRun(transform.KindTimeout, false, 100*time.Millisecond)
	tr.ObserveRun("made-up", false, time.Millisecond)

	got := scrape(t, m)
	for _, line := range []string{
		`hooklane_transform_runs_total{outcome="ok"} 2`,
		`hooklane_transform_runs_total{outcome="cancelled"} 1`,
		`hooklane_transform_runs_total{outcome="failed"} 4`,
		`hooklane_transform_failures_total{kind="throw"} 2`,
		`hooklane_transform_failures_total{kind="timeout"} 2`,
		`hooklane_transform_failures_total{kind="invalid_result"} 0`,
		`hooklane_transform_run_duration_seconds_count 7`,
		`hooklane_transform_run_duration_seconds_bucket{le="0.0005"} 1`,
	} {
		require.Contains(t, got, line)
	}
	require.NotContains(t, got, "made-up", "the kind label set is closed")
	require.Equal(t, 3, strings.Count(got, "hooklane_transform_runs_total{"))
}
