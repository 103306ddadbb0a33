package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pathReceiver is a loopback receiver serving several subscriptions, one
// path each. While down it answers 503 and counts the refused requests per
// path; while up it records, per path, the first delivery of each
// CloudEvents id in arrival order, by message group.
type pathReceiver struct {
	srv     *httptest.Server
	down    atomic.Bool
	mu      sync.Mutex
	refused map[string]int
	seen    map[string]map[string]int   // path → id → deliveries
	order   map[string]map[string][]int // path → group → seqs, first deliveries in arrival order
}

func newPathReceiver(t *testing.T) *pathReceiver {
	t.Helper()
	r := &pathReceiver{refused: map[string]int{}, seen: map[string]map[string]int{}, order: map[string]map[string][]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var ce struct {
			ID    string `json:"id"`
			Group string `json:"messagegroup"`
			Data  struct {
				Seq int `json:"seq"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &ce); err != nil || ce.ID == "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		path := req.URL.Path
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.down.Load() {
			r.refused[path]++
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if r.seen[path] == nil {
			r.seen[path], r.order[path] = map[string]int{}, map[string][]int{}
		}
		if r.seen[path][ce.ID]++; r.seen[path][ce.ID] == 1 {
			r.order[path][ce.Group] = append(r.order[path][ce.Group], ce.Data.Seq)
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// metricValue reads one sample of the gateway's /metrics (0 when absent).
func metricValue(t *testing.T, p *process, sample string) float64 {
	t.Helper()
	status, _, body := p.request(t.Context(), http.MethodGet, "/metrics", "", "")
	require.Equal(t, http.StatusOK, status)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` ([0-9.e+]+)$`).FindSubmatch(body)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	require.NoError(t, err)
	return v
}

// TestFaultReceiverDownCircuit: a receiver down for 60 s under load, with
// circuit breaking on (API.md §12). Two subscriptions share the receiver:
// IMMEDIATE, and BLOCK_ON_ERROR over 20 message groups. While it is down
// the requests that reach it are bounded by the failures that open each
// circuit, those already in flight, and the probes; after it returns
// everything is delivered, nothing lost, each ordered group in ingest
// order. Figures are logged.
func TestFaultReceiverDownCircuit(t *testing.T) {
	t.Parallel()
	const (
		before   = 5 * time.Second
		outage   = 60 * time.Second
		cooldown = 5 * time.Second
		groups   = 20
	)
	bin := hooklaneBinary.get(t)
	recv := newPathReceiver(t)
	p := startProcess(t, bin, "receiver-down-circuit", faultEnv(map[string]string{
		"HOOKLANE_DATA_DIR": t.TempDir(), "HOOKLANE_CIRCUIT_FAILURES": "10", "HOOKLANE_CIRCUIT_COOLDOWN": cooldown.String(),
	}))
	ctx := t.Context()
	typ := "fault.circuit"
	status, body := p.post(ctx, "/api/event-types", "application/json", `{"code":"`+typ+`","name":"fault"}`)
	require.Equal(t, http.StatusCreated, status, "%s", body)
	subIDs := map[string]string{}
	// The ordered subscription takes one event in four (extension
	// ordered=yes): a BLOCK_ON_ERROR group drains one job at a time, and
	// under the race detector on a shared 2-core machine its backlog of a
	// minute at full rate would take minutes.
	for _, s := range []struct{ code, mode, filters string }{
		{"imm", "IMMEDIATE", `[]`}, {"ord", "BLOCK_ON_ERROR", `[{"field":"ordered","op":"eq","value":"yes"}]`},
	} {
		status, body = p.post(ctx, "/api/subscriptions", "application/json", `{"code":"`+s.code+`","mode":"`+s.mode+`","timeoutSeconds":5,
			"retry":{"maxAttempts":30,"initialBackoffSeconds":1,"maxBackoffSeconds":3},"filters":`+s.filters+`,
			"eventTypes":[{"eventTypeCode":"`+typ+`"}],"target":"`+recv.srv.URL+`/`+s.code+`"}`)
		require.Equal(t, http.StatusCreated, status, "%s", body)
		var sub struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal(body, &sub))
		subIDs[s.code] = sub.ID
	}

	// The load: 5 producers, batches of 10 events over 20 message groups,
	// every 200 ms each (at most 250 ev/s), for the whole test.
	l := &faultLoad{t: t, typ: typ, accepted: map[string]string{}, others: map[int]int{}}
	l.target.Store(p)
	loadCtx, stopLoad := context.WithTimeout(ctx, before+outage)
	defer stopLoad()
	start := time.Now()
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		l.runGrouped(loadCtx, 5, 10, groups, 200*time.Millisecond)
	}()
	select {
	case <-time.After(before):
	case <-ctx.Done():
	}
	recv.down.Store(true)
	downAt := time.Now()
	<-loadDone
	recv.down.Store(false)
	upAt := time.Now()
	accepted, others, _ := l.snapshot()
	require.Empty(t, others, "every batch accepted at once")
	rate := float64(len(accepted)) / upAt.Sub(start).Seconds()

	recv.mu.Lock()
	refused := maps.Clone(recv.refused)
	recv.mu.Unlock()
	probes := metricValue(t, p, `hooklane_circuit_probes_total{outcome="started"}`)
	opened := metricValue(t, p, `hooklane_circuit_transitions_total{to="open"}`)

	// Both circuits close at their next probe, then everything is
	// delivered.
	closedAfter := map[string]time.Duration{}
	deadline := time.Now().Add(4 * time.Minute)
	lost := map[string]int{}
	for {
		for code, id := range subIDs {
			if _, ok := closedAfter[code]; !ok {
				if _, _, body := p.request(ctx, http.MethodGet, "/api/subscriptions/"+id, "", ""); strings.Contains(string(body), `"state":"CLOSED"`) {
					closedAfter[code] = time.Since(upAt)
				}
			}
		}
		recv.mu.Lock()
		clear(lost)
		for id := range accepted {
			if recv.seen["/imm"][id] == 0 {
				lost["/imm"]++
			}
			if ordered(id) && recv.seen["/ord"][id] == 0 {
				lost["/ord"]++
			}
		}
		recv.mu.Unlock()
		if len(lost) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond) //nolint:forbidigo // polls the receiver's tally and the circuits until the deadline: deliveries come from the gateway process
	}
	drained := time.Since(upAt)
	closedProbes := metricValue(t, p, `hooklane_circuit_probes_total{outcome="started"}`)

	recv.mu.Lock()
	defer recv.mu.Unlock()
	duplicates := 0
	for _, path := range []string{"/imm", "/ord"} {
		for _, n := range recv.seen[path] {
			duplicates += max(n-1, 0)
		}
	}
	// Order: each group is posted by one producer, batch after batch, so
	// its ingest order is its seq order; within each group of the
	// BLOCK_ON_ERROR subscription first deliveries must follow it.
	violations := 0
	for g, seqs := range recv.order["/ord"] {
		for i := 1; i < len(seqs); i++ {
			if seqs[i] < seqs[i-1] {
				violations++
				if violations <= 5 {
					t.Logf("group %s: seq %d delivered after seq %d", g, seqs[i], seqs[i-1])
				}
			}
		}
	}
	nOrdered := 0
	for id := range accepted {
		if ordered(id) {
			nOrdered++
		}
	}
	t.Logf("load %.0f ev/s: %d events to the IMMEDIATE subscription, %d of them to the BLOCK_ON_ERROR one, in %s; receiver down %s (answering 503)",
		rate, len(accepted), nOrdered, upAt.Sub(start).Round(time.Second), upAt.Sub(downAt).Round(time.Second))
	t.Logf("requests that reached the receiver while down: imm=%d ord=%d (circuits opened %v times, %v probes started while down, %v in all)",
		refused["/imm"], refused["/ord"], opened, probes, closedProbes)
	t.Logf("after it returned: circuits closed after imm=%s ord=%s; lost imm=%d ord=%d, duplicates=%d, all delivered in %s, ordering violations=%d",
		closedAfter["imm"].Round(100*time.Millisecond), closedAfter["ord"].Round(100*time.Millisecond), lost["/imm"], lost["/ord"],
		duplicates, drained.Round(100*time.Millisecond), violations)
	if len(lost) > 0 {
		logStuck(t, p, []string{"imm", "ord"})
	}
	require.Empty(t, lost, "accepted events never delivered")
	require.Zero(t, violations, "BLOCK_ON_ERROR groups out of order")
	// Each circuit opens after 10 consecutive failures; the requests of its
	// pool already in flight then (default concurrency 64) still fail, and
	// each probe is one request. Without the circuit, every job would retry
	// every 1–3 s through the outage (tens of thousands of requests).
	for _, path := range []string{"/imm", "/ord"} {
		require.LessOrEqual(t, float64(refused[path]), 10+64+probes, "requests to %s while down", path)
	}
	require.GreaterOrEqual(t, probes, float64(2), "each circuit probed during the outage")
	require.Less(t, probes, float64(20), "probes are spaced by the doubling cooldown")
}

// runGrouped posts, with `posters` producers, batches of `batch` events
// until ctx ends, pausing `pace` after each accepted batch. Producer k
// alone posts to its share of the `groups` message groups (g-k, g-(k+posters),
// …), one request at a time, so each group's ingest order is its seq order.
func (l *faultLoad) runGrouped(ctx context.Context, posters, batch, groups int, pace time.Duration) {
	var wg sync.WaitGroup
	for k := range posters {
		wg.Go(func() {
			mine := groups / posters
			for n := 0; ctx.Err() == nil; n += batch {
				items := make([]string, 0, batch)
				for i := n; i < n+batch; i++ {
					id := fmt.Sprintf("ev-%d-%d", k, i)
					ext := ""
					if ordered(id) {
						ext = `,"ordered":"yes"`
					}
					items = append(items, fmt.Sprintf(`{"specversion":"1.0","id":%q,"source":"/fault","type":%q,"messagegroup":"g-%d","data":{"seq":%d}%s}`,
						id, l.typ, k+posters*(i%mine), i, ext))
				}
				if !l.postUntilAccepted(ctx, "["+strings.Join(items, ",")+"]") {
					return
				}
				select {
				case <-ctx.Done():
				case <-time.After(pace):
				}
			}
		})
	}
	wg.Wait()
}

// ordered reports whether the event of a load id ("ev-<producer>-<n>")
// goes to the ordered subscription too: one in four, every group's share.
func ordered(id string) bool {
	var k, n int
	_, _ = fmt.Sscanf(id, "ev-%d-%d", &k, &n)
	return (n/20)%4 == 0
}

// logStuck logs, for each subscription, its circuit and a few of its jobs
// that are not COMPLETED, with their histories: what a failure needs to be
// understood.
func logStuck(t *testing.T, p *process, codes []string) {
	t.Helper()
	ctx := context.Background()
	_, _, body := p.request(ctx, http.MethodGet, "/api/subscriptions?limit=50", "", "")
	t.Logf("subscriptions: %s", body)
	for _, code := range codes {
		for _, st := range []string{"PENDING", "QUEUED", "IN_PROGRESS", "ERROR"} {
			_, _, jobs := p.request(ctx, http.MethodGet, "/api/dispatch-jobs?limit=3&subscription="+code+"&status="+st, "", "")
			var page struct {
				Items []struct {
					ID string `json:"id"`
				} `json:"items"`
			}
			_ = json.Unmarshal(jobs, &page)
			t.Logf("%s %s: %d shown", code, st, len(page.Items))
			for _, j := range page.Items {
				_, _, one := p.request(ctx, http.MethodGet, "/api/dispatch-jobs/"+j.ID+"?include=history", "", "")
				t.Logf("  %.4000s", one)
			}
		}
	}
}
