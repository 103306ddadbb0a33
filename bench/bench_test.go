package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPercentile(t *testing.T) {
	t.Parallel()
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name string
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one", ms(7), 0.999, 7 * time.Millisecond},
		{"median of unsorted", ms(5, 1, 4, 2, 3), 0.5, 3 * time.Millisecond},
		{"p90 of ten", ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 0.9, 9 * time.Millisecond},
		{"p99 of ten is the max", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.99, 10 * time.Millisecond},
		{"max", ms(3, 1, 2), 1, 3 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, percentile(tt.in, tt.p))
		})
	}
}

func TestEventFactoryBodies(t *testing.T) {
	t.Parallel()
	f := newEventFactory("run1", 256).withPrefix("p3-")
	var one map[string]any
	require.NoError(t, json.Unmarshal(f.body(42, 1), &one))
	require.Equal(t, "p3-42", one["id"])
	require.Equal(t, "/bench/run1", one["source"])
	require.Equal(t, EventType, one["type"])
	data, err := json.Marshal(one["data"])
	require.NoError(t, err)
	require.Len(t, data, 256)

	var batch []map[string]any
	require.NoError(t, json.Unmarshal(f.body(100, 3), &batch))
	require.Len(t, batch, 3)
	for i, ev := range batch {
		require.Equal(t, "p3-"+[]string{"100", "101", "102"}[i], ev["id"])
	}
}

func TestTrackerLatencyFromScheduledTime(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr := newTracker("p1-", start, 10*time.Millisecond)
	// Event 0 was due at start, event 2 at start+20ms.
	require.True(t, tr.arrive("p1-0", start.Add(3*time.Millisecond)))
	require.True(t, tr.arrive("p1-2", start.Add(50*time.Millisecond)))
	require.True(t, tr.arrive("p1-2", start.Add(60*time.Millisecond)), "a duplicate is still this phase's")
	require.False(t, tr.arrive("p2-1", start), "another phase's event")
	require.False(t, tr.arrive("p1-x", start))
	st := tr.stats()
	require.Equal(t, int64(2), st.unique)
	require.Equal(t, int64(1), st.dups)
	require.Equal(t, 50*time.Millisecond, st.last)
	require.Equal(t, []time.Duration{3 * time.Millisecond, 30 * time.Millisecond}, tr.latencies())

	ok, err := tr.waitFor(context.Background(), 2, time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = tr.waitFor(context.Background(), 3, 10*time.Millisecond)
	require.NoError(t, err)
	require.False(t, ok, "the third event never arrives")
}

// fakeGateway accepts the benchmark's setup calls and delivers every
// ingested event to the subscription's target before answering, the
// contract of API.md §1, §3 and §6 in the smallest form.
type fakeGateway struct {
	mu     sync.Mutex
	target string
	drop   bool
}

func (g *fakeGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/api/event-types":
		w.WriteHeader(http.StatusCreated)
	case r.Method == http.MethodPost && r.URL.Path == "/api/subscriptions":
		var sub struct {
			Target string `json:"target"`
		}
		_ = json.Unmarshal(body, &sub)
		g.mu.Lock()
		g.target = sub.Target
		g.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"01JDSUB"}`))
	case r.Method == http.MethodDelete && r.URL.Path == "/api/subscriptions/01JDSUB":
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPost && r.URL.Path == "/api/events":
		var events []json.RawMessage
		if strings.HasPrefix(r.Header.Get("Content-Type"), ctBatch) {
			_ = json.Unmarshal(body, &events)
		} else {
			events = []json.RawMessage{body}
		}
		g.mu.Lock()
		target, drop := g.target, g.drop
		g.mu.Unlock()
		for i, ev := range events {
			if drop && i%2 == 1 {
				continue
			}
			resp, err := http.Post(target, "application/cloudevents+json", bytes.NewReader(ev)) //nolint:noctx // test
			if err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			_ = resp.Body.Close()
		}
		w.WriteHeader(http.StatusCreated)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func runAgainstFake(t *testing.T, g *fakeGateway) *Report {
	t.Helper()
	srv := httptest.NewServer(g)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		http.DefaultClient.CloseIdleConnections()
	})
	cfg := Short()
	cfg.BaseURL = srv.URL
	cfg.Duration = 200 * time.Millisecond
	cfg.DrainTimeout = 2 * time.Second
	cfg.Connections = []int{2}
	cfg.Rates = []float64{100}
	cfg.BatchSize = 5
	rep, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	return rep
}

func TestRunAgainstAGatewayThatDeliversEverything(t *testing.T) {
	t.Parallel()
	rep := runAgainstFake(t, &fakeGateway{})
	require.Empty(t, rep.Problems())
	require.Len(t, rep.Ceiling, 2)
	require.Len(t, rep.Ingest, 2)
	for _, i := range rep.Ingest {
		require.Positive(t, i.EventsPerSec)
		require.Equal(t, i.Events, i.Delivered)
		require.Equal(t, i.Requests*int64(i.Batch), i.Events)
		require.Positive(t, i.RatioToCeiling)
		require.Positive(t, i.Cost.CPUSeconds)
		require.Positive(t, i.Cost.AllocatedBytes)
	}
	require.Len(t, rep.Latency, 1)
	l := rep.Latency[0]
	require.Equal(t, int64(20), l.Scheduled)
	require.Equal(t, l.Scheduled, l.Delivered)
	require.LessOrEqual(t, l.P50Ms, l.P90Ms)
	require.LessOrEqual(t, l.P90Ms, l.P99Ms)
	require.LessOrEqual(t, l.P99Ms, l.P999Ms)
	require.LessOrEqual(t, l.P999Ms, l.MaxMs)
	require.Positive(t, rep.PeakRSSBytes)
	var table bytes.Buffer
	require.NoError(t, rep.WriteTable(&table))
	require.Contains(t, table.String(), "end to end (open loop)")
}

func TestRunReportsLostDeliveries(t *testing.T) {
	t.Parallel()
	rep := runAgainstFake(t, &fakeGateway{drop: true})
	problems := rep.Problems()
	require.NotEmpty(t, problems)
	require.Contains(t, strings.Join(problems, "\n"), "ingest batch 5")
	require.False(t, rep.Ingest[1].AllDelivered)
	require.Less(t, rep.Ingest[1].Delivered, rep.Ingest[1].Events)
}
