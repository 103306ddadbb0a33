package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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

func TestMain(m *testing.M) {
	// The Pub/Sub client of the destination phase (through
	// destination/devbroker) links OpenCensus, whose package init starts a
	// view worker that lives as long as the process.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

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
	tr := newTracker("p1-", start, 10*time.Millisecond, 1)
	// Event 0 was due at start, event 2 at start+20ms.
	require.True(t, tr.arrive("p1-0", 0, start.Add(3*time.Millisecond)))
	require.True(t, tr.arrive("p1-2", 0, start.Add(50*time.Millisecond)))
	require.True(t, tr.arrive("p1-2", 0, start.Add(60*time.Millisecond)), "a duplicate is still this phase's")
	require.False(t, tr.arrive("p2-1", 0, start), "another phase's event")
	require.False(t, tr.arrive("p1-x", 0, start))
	require.False(t, tr.arrive("p1-1", 1, start), "no second subscription in this phase")
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

func TestTrackerCountsEachSubscriptionOfAFanOut(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr := newTracker("f-", start, 10*time.Millisecond, 3)
	for k := range 3 {
		require.True(t, tr.arrive("f-1", k, start.Add(time.Duration(12+k)*time.Millisecond)))
	}
	require.True(t, tr.arrive("f-1", 2, start.Add(40*time.Millisecond)))
	require.False(t, tr.arrive("f-1", 3, start))
	st := tr.stats()
	require.Equal(t, int64(3), st.unique)
	require.Equal(t, int64(1), st.dups)
	// Event 1 was due at start+10ms: each of its webhooks' latency counts from then.
	require.Equal(t, []time.Duration{2 * time.Millisecond, 3 * time.Millisecond, 4 * time.Millisecond}, tr.latencies())
}

func TestSoakSummary(t *testing.T) {
	t.Parallel()
	s := &SoakResult{Seconds: 60, Samples: []RSSSample{{0, 100}, {20, 110}, {40, 105}, {60, 120}}}
	s.summarise()
	require.InDelta(t, 100.0, s.FirstMiB, 1e-9)
	require.InDelta(t, 120.0, s.LastMiB, 1e-9)
	require.InDelta(t, 120.0, s.MaxMiB, 1e-9)
	// Least squares over (0,100) (20,110) (40,105) (60,120): 0.275 MiB/s.
	require.InDelta(t, 16.5, s.SlopeMiBPerMin, 1e-9)

	long := &SoakResult{Seconds: 300, Samples: []RSSSample{{0, 50}, {30, 200}, {60, 200}, {180, 200}, {300, 200}}}
	long.summarise()
	require.InDelta(t, 0.0, long.SlopeMiBPerMin, 1e-9, "the first minute's warm-up is left out of the slope")
}

// fakeGateway accepts the benchmark's setup calls and delivers every
// ingested event to the targets of its type's subscriptions before
// answering, the contract of API.md §1, §3 and §6 in the smallest form.
type fakeGateway struct {
	mu      sync.Mutex
	subs    map[string]fakeSub // by id
	nextID  int
	drop    bool // deliver only the even items of a batch
	creates int
}

type fakeSub struct{ typ, target string }

func (g *fakeGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/api/event-types":
		w.WriteHeader(http.StatusCreated)
	case r.Method == http.MethodPost && r.URL.Path == "/api/subscriptions":
		var sub struct {
			EventTypes []struct {
				EventTypeCode string `json:"eventTypeCode"`
			} `json:"eventTypes"`
			Target string `json:"target"`
		}
		_ = json.Unmarshal(body, &sub)
		g.mu.Lock()
		if g.subs == nil {
			g.subs = map[string]fakeSub{}
		}
		g.nextID++
		g.creates++
		id := fmt.Sprintf("sub%d", g.nextID)
		g.subs[id] = fakeSub{typ: sub.EventTypes[0].EventTypeCode, target: sub.Target}
		g.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = fmt.Fprintf(w, `{"id":%q}`, id)
	case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/api/subscriptions/"):
		g.mu.Lock()
		delete(g.subs, strings.TrimPrefix(r.URL.Path, "/api/subscriptions/"))
		g.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPost && r.URL.Path == "/api/events":
		var events []json.RawMessage
		if strings.HasPrefix(r.Header.Get("Content-Type"), ctBatch) {
			_ = json.Unmarshal(body, &events)
		} else {
			events = []json.RawMessage{body}
		}
		for i, ev := range events {
			var head struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal(ev, &head)
			g.mu.Lock()
			var targets []string
			for _, s := range g.subs {
				if s.typ == head.Type {
					targets = append(targets, s.target)
				}
			}
			drop := g.drop
			g.mu.Unlock()
			if drop && i%2 == 1 {
				continue
			}
			for _, target := range targets {
				resp, err := http.Post(target, "application/cloudevents+json", bytes.NewReader(ev)) //nolint:noctx // test
				if err != nil {
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				_ = resp.Body.Close()
			}
		}
		w.WriteHeader(http.StatusCreated)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func (g *fakeGateway) subscriptions() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.subs)
}

func runAgainstFake(t *testing.T, g *fakeGateway, edit func(*Config)) *Report {
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
	cfg.FanOut = 3
	cfg.MatchSizes = []int{2, 6}
	cfg.MatchDuration = 100 * time.Millisecond
	if edit != nil {
		edit(&cfg)
	}
	rep, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	return rep
}

func TestRunAgainstAGatewayThatDeliversEverything(t *testing.T) {
	t.Parallel()
	g := &fakeGateway{}
	rep := runAgainstFake(t, g, nil)
	require.Empty(t, rep.Problems())
	require.Empty(t, rep.Notes)
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

	f := rep.FanOut
	require.NotNil(t, f)
	require.Equal(t, 3, f.Subscriptions)
	require.Positive(t, f.Events)
	require.Equal(t, 3*f.Events, f.Webhooks)
	require.Equal(t, f.Webhooks, f.Delivered)
	require.Positive(t, f.WebhooksPerSec)
	require.Positive(t, f.WebhooksRatioToCeiling)

	require.Len(t, rep.Matching, 2)
	require.Equal(t, []int{2, 6}, []int{rep.Matching[0].Subscriptions, rep.Matching[1].Subscriptions})
	for _, m := range rep.Matching {
		require.Positive(t, m.Events)
		require.Equal(t, m.Events, m.Delivered)
		require.Positive(t, m.IndexMatchMicros)
		require.Positive(t, m.EventsRatio)
	}
	require.InDelta(t, 1.0, rep.Matching[0].EventsRatio, 1e-9)
	require.Equal(t, 1+3+6, g.creates, "the run's own, the fan-out's and the matching phase's subscriptions")
	require.Equal(t, 0, g.subscriptions(), "every subscription deleted at the end")

	var table bytes.Buffer
	require.NoError(t, rep.WriteTable(&table))
	require.Contains(t, table.String(), "end to end (open loop)")
	require.Contains(t, table.String(), "fan-out")
	require.Contains(t, table.String(), "matching scale")
}

// TestRunIngestsTheBatchesAskedFor: IngestBatches narrows the ingest phase
// (to profile one kind alone), and BeforePhasesFunc runs once, after the
// ceiling and before the gateway's phases.
func TestRunIngestsTheBatchesAskedFor(t *testing.T) {
	t.Parallel()
	calls := 0
	rep := runAgainstFake(t, &fakeGateway{}, func(c *Config) {
		c.Phases = []string{PhaseIngest}
		c.IngestBatches = []int{c.BatchSize}
		c.BeforePhasesFunc = func() error {
			calls++
			return nil
		}
	})
	require.Equal(t, 1, calls)
	require.Len(t, rep.Ceiling, 2, "the ceiling still measures both sizes")
	require.Len(t, rep.Ingest, 1)
	require.Equal(t, rep.BatchSize, rep.Ingest[0].Batch)
	require.Equal(t, rep.Ingest[0].Events, rep.Ingest[0].Delivered)
}

func TestSaturationSearchFindsTheRateThatKeepsUp(t *testing.T) {
	t.Parallel()
	// The fake delivers before answering, one request at a time per
	// connection: with 2 connections for the open loop it cannot exceed a
	// few thousand events/s, and it keeps up with 100/s.
	rep := runAgainstFake(t, &fakeGateway{}, func(c *Config) {
		c.Phases = []string{PhaseLatency, PhaseSaturation}
		c.SaturationSteps = 3
		c.SaturationStep = 200 * time.Millisecond
		c.SaturationP99 = time.Second
	})
	require.Empty(t, rep.Problems())
	sat := rep.Saturation
	require.NotNil(t, sat)
	require.Len(t, sat.Steps, 3)
	// The search starts from the fixed-rate phase's outcome, which a
	// loaded machine can spoil (a stall of a few tens of ms in a phase of
	// 200 ms): half again 100/s when it was sustained, else half of it.
	require.Len(t, rep.Latency, 1)
	if rep.Latency[0].Sustained {
		require.InDelta(t, 150.0, sat.Steps[0].OfferedPerSec, 1e-9, "half again the highest sustained fixed rate")
		require.GreaterOrEqual(t, sat.SustainedPerSec, 100.0)
	} else {
		require.InDelta(t, 50.0, sat.Steps[0].OfferedPerSec, 1e-9, "half of the lowest rate not sustained")
		require.Less(t, sat.SustainedPerSec, 100.0)
	}
	for _, s := range sat.Steps {
		if s.Sustained {
			require.LessOrEqual(t, s.OfferedPerSec, sat.SustainedPerSec)
		}
	}
	require.Positive(t, sat.RatioToCeiling)
}

func TestBudgetSkipsWhatDoesNotFit(t *testing.T) {
	t.Parallel()
	g := &fakeGateway{}
	rep := runAgainstFake(t, g, func(c *Config) { c.Budget = 2 * time.Second })
	require.Empty(t, rep.Problems())
	require.NotEmpty(t, rep.Notes)
	require.Contains(t, rep.Notes[0], "skipped: ")
	require.Contains(t, rep.Notes[0], "time budget")
	require.Nil(t, rep.FanOut)
	require.Empty(t, rep.Matching)
	var table bytes.Buffer
	require.NoError(t, rep.WriteTable(&table))
	require.Contains(t, table.String(), "note: ")
}

func TestRunReportsLostDeliveries(t *testing.T) {
	t.Parallel()
	rep := runAgainstFake(t, &fakeGateway{drop: true}, func(c *Config) { c.Phases = []string{PhaseIngest} })
	problems := rep.Problems()
	require.NotEmpty(t, problems)
	require.Contains(t, strings.Join(problems, "\n"), "ingest batch 5")
	require.False(t, rep.Ingest[1].AllDelivered)
	require.Less(t, rep.Ingest[1].Delivered, rep.Ingest[1].Events)
}

func TestConfigRejectsWhatCannotRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no url", func(c *Config) { c.BaseURL = "" }, "no gateway URL"},
		{"unknown phase", func(c *Config) { c.Phases = []string{"ingest", "warp"} }, `unknown phase "warp"`},
		{"zero connections", func(c *Config) { c.Connections = []int{8, 0} }, "connections must be positive"},
		{"negative rate", func(c *Config) { c.Rates = []float64{-1} }, "rates must be positive"},
		{"match sizes not increasing", func(c *Config) { c.MatchSizes = []int{10, 10} }, "increasing"},
		{"ingest batch of another size", func(c *Config) { c.IngestBatches = []int{1, 7} }, "ingest batch sizes are 1 or 100, got 7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := Defaults()
			cfg.BaseURL = "http://127.0.0.1:1"
			tt.edit(&cfg)
			_, err := Run(context.Background(), cfg)
			require.ErrorContains(t, err, tt.want)
		})
	}
}
