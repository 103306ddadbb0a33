package main

import (
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// scrape reads /metrics and returns every sample as
// `name{label="value",...}` (labels sorted) → value; histograms give their
// _count and _sum.
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := get(t.Context(), base+"/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			key := name + labelsOf(m)
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[name+"_count"+labelsOf(m)] = float64(m.GetHistogram().GetSampleCount())
				out[name+"_sum"+labelsOf(m)] = m.GetHistogram().GetSampleSum()
			default:
			}
		}
	}
	return out
}

func labelsOf(m *dto.Metric) string {
	if len(m.GetLabel()) == 0 {
		return ""
	}
	parts := make([]string, 0, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		parts = append(parts, l.GetName()+`="`+l.GetValue()+`"`)
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

// TestMetricsAfterKnownWorkload runs a known workload through the whole
// gateway and checks the metric values it must leave: 3 accepted events
// of a registered type, 1 duplicate, 1 rejected unregistered type
// (labelled "other"), 3 jobs, deliveries by outcome and status class (one
// 503 retried, then 2xx), latency histograms and the cache hit ratio.
func TestMetricsAfterKnownWorkload(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	var failedOnce atomic.Bool
	recv.failFunc = func(d delivery) int {
		if strings.Contains(string(d.body), `"id":"m-1"`) && failedOnce.CompareAndSwap(false, true) {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	}
	gw := startGateway(t, nil)
	gw.setup(t, recv.srv.URL+"/hooks", `,"retry":{"maxAttempts":3,"initialBackoffSeconds":1,"maxBackoffSeconds":1}`)

	event := func(id string) string {
		return `{"specversion":"1.0","id":"` + id + `","source":"/shop","type":"shop.order.created","data":{}}`
	}
	var jobIDs []string
	for _, id := range []string{"m-1", "m-2", "m-3"} {
		status, _, ev := gw.do(t, "POST", "/api/events", "application/cloudevents+json", event(id), nil)
		require.Equal(t, http.StatusCreated, status, "%v", ev)
		jobIDs = append(jobIDs, ev["dispatchJobs"].([]any)[0].(map[string]any)["id"].(string))
	}
	status, _, _ := gw.do(t, "POST", "/api/events", "application/cloudevents+json", event("m-2"), nil)
	require.Equal(t, http.StatusOK, status, "duplicate")
	status, _, _ = gw.do(t, "POST", "/api/events", "application/cloudevents+json",
		`{"specversion":"1.0","id":"u-1","source":"/shop","type":"made.up.type-7f3a","data":{}}`, nil)
	require.Equal(t, http.StatusUnprocessableEntity, status)
	for _, id := range jobIDs {
		gw.waitJob(t, id, "COMPLETED")
	}

	var got map[string]float64
	// The router records the attempt, then calls its hook: wait for the
	// last hook to have run.
	require.Eventually(t, func() bool {
		got = scrape(t, gw.base)
		return got[`hooklane_deliveries_total{destination="webhook",outcome="completed",pool="default",status_class="2xx"}`] == 3
	}, 30*time.Second, 20*time.Millisecond)

	require.InDelta(t, 3, got[`hooklane_events_ingested_total{outcome="accepted",type="shop.order.created"}`], 0)
	require.InDelta(t, 1, got[`hooklane_events_ingested_total{outcome="duplicate",type="shop.order.created"}`], 0)
	require.InDelta(t, 1, got[`hooklane_events_ingested_total{outcome="rejected",type="other"}`], 0)
	for k := range got {
		require.NotContains(t, k, "made.up.type", "an unregistered type must not become a label")
		for _, id := range jobIDs {
			require.NotContains(t, k, id, "a job id must not become a label")
		}
		require.NotContains(t, k, "127.0.0.1", "a URL must not become a label")
	}
	require.InDelta(t, 3, got[`hooklane_dispatch_jobs_created_total{kind="EVENT"}`], 0)
	require.InDelta(t, 1, got[`hooklane_deliveries_total{destination="webhook",outcome="retry",pool="default",status_class="5xx"}`], 0)
	require.InDelta(t, 4, got[`hooklane_delivery_duration_seconds_count{destination="webhook",pool="default"}`], 0)
	require.InDelta(t, 3, got[`hooklane_delivery_end_to_end_seconds_count{pool="default"}`], 0)
	require.Positive(t, got[`hooklane_delivery_end_to_end_seconds_sum{pool="default"}`])
	require.InDelta(t, 0, got[`hooklane_queue_errors_total{operation="send"}`], 0)
	// The retried job went back through PENDING: the pending poller moved it.
	require.GreaterOrEqual(t, got[`hooklane_poller_moved_jobs_total{poller="pending"}`], 1.0)
	require.Contains(t, got, "hooklane_stream_clients")
	hits, misses := got["hooklane_subscription_cache_hits_total"], got["hooklane_subscription_cache_misses_total"]
	require.Positive(t, hits+misses)
	require.InDelta(t, hits/(hits+misses), got["hooklane_subscription_cache_hit_ratio"], 1e-9)
	require.InDelta(t, 3, got[`hooklane_http_requests_total{code="201",method="POST",route="/api/events"}`], 0)
	require.Contains(t, got, "go_goroutines", "the Go collector is registered")
}

// TestMetricsOnOwnListener: with HOOKLANE_METRICS_LISTEN set, /metrics is
// served there, and only there: the API listener answers 404 for it.
func TestMetricsOnOwnListener(t *testing.T) {
	t.Parallel()
	metricsAddr := freePort(t)
	gw := startGateway(t, map[string]string{"HOOKLANE_METRICS_LISTEN": metricsAddr})
	status, _, _ := gw.do(t, "GET", "/healthz", "", "", nil)
	require.Equal(t, http.StatusOK, status)

	resp, err := http.Get(gw.base + "/metrics") //nolint:noctx // test
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "the API listener does not serve /metrics")

	got := scrape(t, "http://"+metricsAddr)
	require.InDelta(t, 1, got[`hooklane_http_requests_total{code="200",method="GET",route="/healthz"}`], 0,
		"the API listener still feeds the metrics")
	resp, err = http.Get("http://" + metricsAddr + "/api/event-types") //nolint:noctx // test
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "the metrics listener serves nothing else")
}
