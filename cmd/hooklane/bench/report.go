package bench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// Report is the outcome of one run; it is written as JSON as is.
type Report struct {
	StartedAt    time.Time `json:"startedAt"`
	FinishedAt   time.Time `json:"finishedAt"`
	Target       string    `json:"target"`
	Mode         string    `json:"mode"`
	Machine      Machine   `json:"machine"`
	PayloadBytes int       `json:"payloadBytes"`
	BatchSize    int       `json:"batchSize"`
	PhaseSeconds float64   `json:"phaseSeconds"`
	// BudgetSeconds is the run's time budget (soak excluded).
	BudgetSeconds float64           `json:"budgetSeconds"`
	Ceiling       []CeilingResult   `json:"ceiling"`
	Ingest        []IngestResult    `json:"ingest"`
	Latency       []LatencyResult   `json:"latency"`
	Saturation    *SaturationResult `json:"saturation,omitempty"`
	FanOut        *FanOutResult     `json:"fanOut,omitempty"`
	Matching      []MatchResult     `json:"matching,omitempty"`
	// ClientMatching is the matching phase's client scale (bench/clients.go).
	ClientMatching []ClientMatchResult `json:"clientMatching,omitempty"`
	Soak           *SoakResult         `json:"soak,omitempty"`
	Replay         *ReplayResult       `json:"replay,omitempty"`
	// Transform is the transform phase (bench/transform.go).
	Transform *TransformResult `json:"transform,omitempty"`
	// Destination is the destination phase (bench/destination.go).
	Destination *DestinationResult `json:"destination,omitempty"`
	// Notes say what the run left out (phases skipped for the time budget).
	Notes []string `json:"notes,omitempty"`
	// PeakRSSBytes is the benchmark process's peak resident set (gateway
	// included when it runs in-process).
	PeakRSSBytes int64 `json:"peakRssBytes"`
}

// Machine describes where the run happened.
type Machine struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpuModel"`
	GoVersion string `json:"goVersion"`
	OS        string `json:"os"`
}

// CeilingResult is the no-op loopback HTTP throughput for one payload and
// concurrency.
type CeilingResult struct {
	Batch          int     `json:"batch"`
	Connections    int     `json:"connections"`
	Requests       int64   `json:"requests"`
	Errors         int64   `json:"errors"`
	RequestsPerSec float64 `json:"requestsPerSec"`
}

// Cost is what the benchmark process spent per 1,000 delivered events
// (gateway, load generator and receiver together when in-process).
type Cost struct {
	CPUSeconds     float64 `json:"cpuSecondsPer1k"`
	AllocatedBytes float64 `json:"allocatedBytesPer1k"`
	// RoundTrips are the gateway's round trips to its backends per
	// delivered event (per webhook in fan-out), by "backend:operation"
	// (e.g. "mongo:find", "sqs:ReceiveMessage"), when Config.RoundTrips
	// is set. Background work (pollers, idle long polls) counts too.
	RoundTrips map[string]float64 `json:"roundTripsPerEvent,omitempty"`
}

// IngestResult is one closed-loop ingest phase and the deliveries it caused.
type IngestResult struct {
	Batch          int     `json:"batch"`
	Connections    int     `json:"connections"`
	Requests       int64   `json:"requests"`
	Errors         int64   `json:"errors"`
	Events         int64   `json:"events"`
	RequestsPerSec float64 `json:"requestsPerSec"`
	EventsPerSec   float64 `json:"eventsPerSec"`
	// LoadSeconds is how long load was offered.
	LoadSeconds float64 `json:"loadSeconds"`
	// BacklogCapped is true when the load stopped early because
	// Config.MaxBacklog accepted events waited for delivery.
	BacklogCapped bool `json:"backlogCapped"`
	// RatioToCeiling is RequestsPerSec over the ceiling at the same payload and connections.
	RatioToCeiling float64 `json:"ratioToCeiling"`
	Delivered      int64   `json:"delivered"`
	Duplicates     int64   `json:"duplicates"`
	AllDelivered   bool    `json:"allDelivered"`
	// DeliveredPerSec is distinct webhooks received over the time from the
	// phase's start to the last arrival.
	DeliveredPerSec float64 `json:"deliveredPerSec"`
	// DeliveryRatioToCeiling is DeliveredPerSec over the single-event ceiling at the same connections.
	DeliveryRatioToCeiling float64 `json:"deliveryRatioToCeiling"`
	// DrainSeconds is how long after the load stopped the last webhook arrived.
	DrainSeconds float64 `json:"drainSeconds"`
	Cost         Cost    `json:"cost"`
}

// LatencyResult is one open-loop phase: latency from each event's scheduled
// send to its webhook's arrival.
type LatencyResult struct {
	OfferedPerSec   float64 `json:"offeredPerSec"`
	Scheduled       int64   `json:"scheduled"`
	Accepted        int64   `json:"accepted"`
	Errors          int64   `json:"errors"`
	Delivered       int64   `json:"delivered"`
	Duplicates      int64   `json:"duplicates"`
	AllDelivered    bool    `json:"allDelivered"`
	DeliveredPerSec float64 `json:"deliveredPerSec"`
	// RatioToCeiling is DeliveredPerSec over the loopback ceiling.
	RatioToCeiling float64 `json:"ratioToCeiling"`
	// Sustained reports that the rate met the saturation criterion (see
	// SaturationResult), on fixed-rate phases as on saturation steps.
	Sustained bool    `json:"sustained,omitempty"`
	P50Ms     float64 `json:"p50Ms"`
	P90Ms     float64 `json:"p90Ms"`
	P99Ms     float64 `json:"p99Ms"`
	P999Ms    float64 `json:"p999Ms"`
	MaxMs     float64 `json:"maxMs"`
	Cost      Cost    `json:"cost"`
}

// SaturationResult is the search for the highest sustained offered rate.
type SaturationResult struct {
	// P99BoundMs is the p99 a sustained rate must stay under.
	P99BoundMs float64         `json:"p99BoundMs"`
	Steps      []LatencyResult `json:"steps"`
	// SustainedPerSec is the highest offered rate sustained (the fixed-rate
	// phases included); FailedPerSec the lowest that was not (0: none failed).
	SustainedPerSec float64 `json:"sustainedPerSec"`
	FailedPerSec    float64 `json:"failedPerSec"`
	// RatioToCeiling is SustainedPerSec over the loopback ceiling.
	RatioToCeiling float64 `json:"ratioToCeiling"`
}

// FanOutResult is closed-loop ingest of one event type with several
// subscriptions, and the webhooks it causes.
type FanOutResult struct {
	Subscriptions         int     `json:"subscriptions"`
	Connections           int     `json:"connections"`
	Events                int64   `json:"events"`
	Errors                int64   `json:"errors"`
	EventsPerSec          float64 `json:"eventsPerSec"`
	BacklogCapped         bool    `json:"backlogCapped"`
	Webhooks              int64   `json:"webhooks"`
	Delivered             int64   `json:"delivered"`
	Duplicates            int64   `json:"duplicates"`
	AllDelivered          bool    `json:"allDelivered"`
	WebhooksPerSec        float64 `json:"webhooksPerSec"`
	DeliveredEventsPerSec float64 `json:"deliveredEventsPerSec"`
	// WebhooksRatioToCeiling is WebhooksPerSec over the loopback ceiling.
	WebhooksRatioToCeiling float64 `json:"webhooksRatioToCeiling"`
	// Cost is per 1,000 webhooks.
	Cost Cost `json:"cost"`
}

// MatchResult is ingest with a number of subscriptions in place, one of
// them matching; ratios are to the first (smallest) size.
type MatchResult struct {
	Subscriptions int     `json:"subscriptions"`
	SetupSeconds  float64 `json:"setupSeconds"`
	Events        int64   `json:"events"`
	Errors        int64   `json:"errors"`
	EventsPerSec  float64 `json:"eventsPerSec"`
	EventsRatio   float64 `json:"eventsRatio"`
	Delivered     int64   `json:"delivered"`
	AllDelivered  bool    `json:"allDelivered"`
	Cost          Cost    `json:"cost"`
	CPURatio      float64 `json:"cpuRatio"`
	// IndexMatchMicros is one match of a subscription index of this size,
	// measured in the benchmark process.
	IndexMatchMicros float64 `json:"indexMatchMicros"`
	IndexRatio       float64 `json:"indexRatio"`
}

// RSSSample is the process's resident set at a time of the soak.
type RSSSample struct {
	Seconds float64 `json:"seconds"`
	MiB     float64 `json:"mib"`
}

// SoakResult is a long open-loop phase with the resident set sampled.
type SoakResult struct {
	Seconds  float64       `json:"seconds"`
	Load     LatencyResult `json:"load"`
	Samples  []RSSSample   `json:"samples"`
	FirstMiB float64       `json:"firstMiB"`
	LastMiB  float64       `json:"lastMiB"`
	MaxMiB   float64       `json:"maxMiB"`
	// SlopeMiBPerMin is the least-squares slope of the samples after the
	// first minute (all of them when the soak is shorter than two minutes).
	SlopeMiBPerMin float64 `json:"slopeMiBPerMin"`
}

func (s *SoakResult) summarise() {
	if len(s.Samples) == 0 {
		return
	}
	s.FirstMiB, s.LastMiB = s.Samples[0].MiB, s.Samples[len(s.Samples)-1].MiB
	for _, x := range s.Samples {
		s.MaxMiB = max(s.MaxMiB, x.MiB)
	}
	pts := s.Samples
	if s.Seconds >= 120 {
		var late []RSSSample
		for _, x := range pts {
			if x.Seconds >= 60 {
				late = append(late, x)
			}
		}
		pts = late
	}
	s.SlopeMiBPerMin = slope(pts) * 60
}

// slope is the least-squares slope of MiB over seconds (0 for fewer than
// two points).
func slope(pts []RSSSample) float64 {
	if len(pts) < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for _, p := range pts {
		sx += p.Seconds
		sy += p.MiB
		sxx += p.Seconds * p.Seconds
		sxy += p.Seconds * p.MiB
	}
	n := float64(len(pts))
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

// loopbackCeiling is the machine's ceiling: the best no-op requests/s of
// single-event bodies at any concurrency.
func (r *Report) loopbackCeiling() float64 {
	best := 0.0
	for _, c := range r.Ceiling {
		if c.Batch == 1 {
			best = max(best, c.RequestsPerSec)
		}
	}
	return best
}

func (r *Report) ceiling(batch, conns int) float64 {
	for _, c := range r.Ceiling {
		if c.Batch == batch && c.Connections == conns {
			return c.RequestsPerSec
		}
	}
	return 0
}

// percentile is the nearest-rank p-quantile (0 < p <= 1) of d; it sorts d.
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	if !slices.IsSorted(d) {
		slices.Sort(d)
	}
	i := int(math.Ceil(p*float64(len(d)))) - 1
	return d[min(max(i, 0), len(d)-1)]
}

type costSample struct {
	cpu   time.Duration
	alloc uint64
	// roundTrips are cumulative counts (Config.RoundTrips), nil without.
	roundTrips map[string]int64
}

// roundTripSettle is how long the closing sample of a phase waits before
// it reads the round-trip counts: a webhook arrives before the gateway
// records its outcome and deletes its message, so the last deliveries'
// writes and deletes (a batched delete lingers a few ms) land just after
// the last arrival.
const roundTripSettle = 250 * time.Millisecond

// sampleCost reads the process's CPU time and allocations, and the
// gateway's round trips when counted.
func (r *runner) sampleCost() costSample {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	c := costSample{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), alloc: ms.TotalAlloc}
	if r.cfg.RoundTrips != nil {
		c.roundTrips = r.cfg.RoundTrips()
	}
	return c
}

// costSince is the cost since before. With round trips counted it reads
// CPU and allocations at once, then the counts after roundTripSettle.
func (r *runner) costSince(ctx context.Context, before costSample) costSample {
	after := r.sampleCost()
	if r.cfg.RoundTrips != nil {
		select {
		case <-time.After(roundTripSettle):
		case <-ctx.Done():
		}
		after.roundTrips = r.cfg.RoundTrips()
	}
	return after.since(before)
}

func (c costSample) since(before costSample) costSample {
	out := costSample{cpu: c.cpu - before.cpu, alloc: c.alloc - before.alloc}
	if c.roundTrips != nil {
		out.roundTrips = make(map[string]int64, len(c.roundTrips))
		for k, v := range c.roundTrips {
			if d := v - before.roundTrips[k]; d != 0 {
				out.roundTrips[k] = d
			}
		}
	}
	return out
}

func (c costSample) per1k(events int64) Cost {
	if events <= 0 {
		return Cost{}
	}
	k := float64(events) / 1000
	out := Cost{CPUSeconds: c.cpu.Seconds() / k, AllocatedBytes: float64(c.alloc) / k}
	if c.roundTrips != nil {
		out.RoundTrips = make(map[string]float64, len(c.roundTrips))
		for op, n := range c.roundTrips {
			out.RoundTrips[op] = float64(n) / float64(events)
		}
	}
	return out
}

// RoundTripTotals sums the round trips per event by backend (the part of
// each key before the colon: "mongo", "sqs").
func (c Cost) RoundTripTotals() map[string]float64 {
	out := make(map[string]float64, 2)
	for k, v := range c.RoundTrips {
		backend, _, _ := strings.Cut(k, ":")
		out[backend] += v
	}
	return out
}

// peakRSS is the process's peak resident set in bytes (Linux reports KiB).
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024
}

func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(raw)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// WriteTable writes the report as readable tables.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	p := func(format string, a ...any) { fmt.Fprintf(tw, format, a...) }
	p("Hooklane bench\t %s\t %s\t %d CPUs\t %s\t payload %d B\t phase %.0fs\t loopback ceiling %.0f req/s\t\n", r.Mode, r.Machine.CPUModel,
		r.Machine.CPUs, r.Machine.GoVersion, r.PayloadBytes, r.PhaseSeconds, r.loopbackCeiling())
	p("\n")
	p("ceiling (no-op loopback HTTP)\tbatch\tconns\trequests\terrors\treq/s\t\n")
	for _, c := range r.Ceiling {
		p("\t%d\t%d\t%d\t%d\t%.0f\t\n", c.Batch, c.Connections, c.Requests, c.Errors, c.RequestsPerSec)
	}
	p("\n")
	p("ingest (closed loop)\tbatch\tconns\treq/s\tevents/s\tx ceiling\terrors\tdelivered\twebhooks/s\tx ceiling\tdrain s\tCPU s/1k\tMB alloc/1k\t\n")
	for _, i := range r.Ingest {
		p("\t%d\t%d\t%.0f\t%.0f\t%.2f\t%d\t%d/%d\t%.0f\t%.2f\t%.1f\t%.3f\t%.1f\t\n", i.Batch, i.Connections, i.RequestsPerSec,
			i.EventsPerSec, i.RatioToCeiling, i.Errors, i.Delivered, i.Events, i.DeliveredPerSec, i.DeliveryRatioToCeiling,
			i.DrainSeconds, i.Cost.CPUSeconds, i.Cost.AllocatedBytes/1e6)
	}
	p("\n")
	p("end to end (open loop)\toffered/s\taccepted\terrors\tdelivered\tdelivered/s\tx ceiling\tp50 ms\tp90 ms\tp99 ms\tp99.9 ms\tmax ms\tCPU s/1k\tMB alloc/1k\t\n")
	for _, l := range r.Latency {
		p("\t%.0f\t%d/%d\t%d\t%d\t%.0f\t%.3f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.3f\t%.1f\t\n", l.OfferedPerSec, l.Accepted, l.Scheduled, l.Errors,
			l.Delivered, l.DeliveredPerSec, l.RatioToCeiling, l.P50Ms, l.P90Ms, l.P99Ms, l.P999Ms, l.MaxMs, l.Cost.CPUSeconds, l.Cost.AllocatedBytes/1e6)
	}
	p("\n")
	if sat := r.Saturation; sat != nil {
		p("saturation (p99 < %.0f ms, delivered >= 90%% of offered)\toffered/s\taccepted\tdelivered/s\tp50 ms\tp99 ms\tsustained\t\n", sat.P99BoundMs)
		for _, l := range sat.Steps {
			p("\t%.0f\t%d/%d\t%.0f\t%.1f\t%.1f\t%v\t\n", l.OfferedPerSec, l.Accepted, l.Scheduled, l.DeliveredPerSec, l.P50Ms, l.P99Ms, l.Sustained)
		}
		p("\tsustained %.0f ev/s\tx ceiling %.3f\tfailed at %.0f ev/s\t\n", sat.SustainedPerSec, sat.RatioToCeiling, sat.FailedPerSec)
		p("\n")
	}
	if f := r.FanOut; f != nil {
		p("fan-out (closed loop)\tsubs\tconns\tevents/s\tdelivered\twebhooks/s\tx ceiling\tevents/s delivered\tCPU s/1k webhooks\t\n")
		p("\t%d\t%d\t%.0f\t%d/%d\t%.0f\t%.3f\t%.0f\t%.3f\t\n", f.Subscriptions, f.Connections, f.EventsPerSec, f.Delivered, f.Webhooks,
			f.WebhooksPerSec, f.WebhooksRatioToCeiling, f.DeliveredEventsPerSec, f.Cost.CPUSeconds)
		p("\n")
	}
	if len(r.Matching) > 0 {
		p("matching scale (exact types)\tsubs\tsetup s\tevents/s\tx first\tCPU s/1k\tx first\tindex match µs\tx first\t\n")
		for _, m := range r.Matching {
			p("\t%d\t%.1f\t%.0f\t%.2f\t%.3f\t%.2f\t%.2f\t%.2f\t\n", m.Subscriptions, m.SetupSeconds, m.EventsPerSec, m.EventsRatio,
				m.Cost.CPUSeconds, m.CPURatio, m.IndexMatchMicros, m.IndexRatio)
		}
		p("\n")
	}
	if len(r.ClientMatching) > 0 {
		p("matching scale (clients x 10 subs)\tclients\tsubs\tindex match µs\tx first\t\n")
		for _, m := range r.ClientMatching {
			p("\t%d\t%d\t%.2f\t%.2f\t\n", m.Clients, m.Subscriptions, m.MatchMicros, m.Ratio)
		}
		p("\n")
	}
	if s := r.Soak; s != nil {
		p("soak\tseconds\toffered/s\tdelivered\tp99 ms\tRSS first MiB\tlast MiB\tmax MiB\tslope MiB/min\t\n")
		p("\t%.0f\t%.0f\t%d/%d\t%.1f\t%.0f\t%.0f\t%.0f\t%.2f\t\n", s.Seconds, s.Load.OfferedPerSec, s.Load.Delivered, s.Load.Accepted,
			s.Load.P99Ms, s.FirstMiB, s.LastMiB, s.MaxMiB, s.SlopeMiBPerMin)
		p("\n")
	}
	r.writeReplay(p)
	r.writeTransform(p)
	r.writeDestination(p)
	r.writeRoundTrips(p)
	p("peak RSS\t%.0f MiB\t\n", float64(r.PeakRSSBytes)/(1<<20))
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	for _, n := range r.Notes {
		if _, err := fmt.Fprintf(w, "note: %s\n", n); err != nil {
			return fmt.Errorf("write table: %w", err)
		}
	}
	return nil
}

// Problems lists what makes the report unsound: a phase with no
// throughput, failed requests, or accepted events never delivered.
// An empty list means every figure stands on complete data.
func (r *Report) Problems() []string {
	var out []string
	for _, c := range r.Ceiling {
		if c.Requests == 0 || c.Errors > 0 {
			out = append(out, fmt.Sprintf("ceiling batch %d conns %d: %d requests, %d errors", c.Batch, c.Connections, c.Requests, c.Errors))
		}
	}
	for _, i := range r.Ingest {
		if i.Events == 0 || i.Errors > 0 || !i.AllDelivered {
			out = append(out, fmt.Sprintf("ingest batch %d conns %d: %d events accepted, %d errors, %d delivered within the drain timeout",
				i.Batch, i.Connections, i.Events, i.Errors, i.Delivered))
		}
	}
	for _, l := range r.Latency {
		if l.Accepted == 0 || l.Errors > 0 || !l.AllDelivered {
			out = append(out, fmt.Sprintf("latency at %.0f/s: %d of %d accepted, %d errors, %d delivered within the drain timeout",
				l.OfferedPerSec, l.Accepted, l.Scheduled, l.Errors, l.Delivered))
		}
	}
	if r.Saturation != nil {
		for _, l := range r.Saturation.Steps {
			// Past saturation requests may fail; accepted events must still arrive.
			if !l.AllDelivered {
				out = append(out, fmt.Sprintf("saturation at %.0f/s: %d accepted, %d delivered", l.OfferedPerSec, l.Accepted, l.Delivered))
			}
		}
	}
	if f := r.FanOut; f != nil && (f.Events == 0 || f.Errors > 0 || !f.AllDelivered) {
		out = append(out, fmt.Sprintf("fan-out: %d events accepted, %d errors, %d of %d webhooks delivered", f.Events, f.Errors, f.Delivered, f.Webhooks))
	}
	for _, m := range r.Matching {
		if m.Events == 0 || m.Errors > 0 || !m.AllDelivered {
			out = append(out, fmt.Sprintf("matching at %d subscriptions: %d events accepted, %d errors, %d delivered", m.Subscriptions, m.Events, m.Errors, m.Delivered))
		}
	}
	if s := r.Soak; s != nil && (s.Load.Accepted == 0 || s.Load.Errors > 0 || !s.Load.AllDelivered) {
		out = append(out, fmt.Sprintf("soak: %d of %d accepted, %d errors, %d delivered", s.Load.Accepted, s.Load.Scheduled, s.Load.Errors, s.Load.Delivered))
	}
	out = append(out, r.replayProblems()...)
	out = append(out, r.transformProblems()...)
	out = append(out, r.destinationProblems()...)
	return out
}

// writeRoundTrips writes, for every phase with counted round trips, the
// round trips per delivered event by backend and operation.
func (r *Report) writeRoundTrips(p func(format string, a ...any)) {
	type row struct {
		phase string
		cost  Cost
	}
	var rows []row
	for _, i := range r.Ingest {
		rows = append(rows, row{fmt.Sprintf("ingest batch %d conns %d", i.Batch, i.Connections), i.Cost})
	}
	for _, l := range r.Latency {
		rows = append(rows, row{fmt.Sprintf("open loop %.0f/s", l.OfferedPerSec), l.Cost})
	}
	if f := r.FanOut; f != nil {
		rows = append(rows, row{fmt.Sprintf("fan-out %d subs (per webhook)", f.Subscriptions), f.Cost})
	}
	for _, m := range r.Matching {
		rows = append(rows, row{fmt.Sprintf("matching %d subs", m.Subscriptions), m.Cost})
	}
	if s := r.Soak; s != nil {
		rows = append(rows, row{"soak", s.Load.Cost})
	}
	header := false
	for _, rw := range rows {
		if rw.cost.RoundTrips == nil {
			continue
		}
		if !header {
			p("round trips per delivered event\tbackend\ttotal\tby operation\t\n")
			header = true
		}
		totals := rw.cost.RoundTripTotals()
		for _, backend := range slices.Sorted(maps.Keys(totals)) {
			var ops []string
			for _, k := range slices.Sorted(maps.Keys(rw.cost.RoundTrips)) {
				if b, op, _ := strings.Cut(k, ":"); b == backend {
					ops = append(ops, fmt.Sprintf("%s %.2f", op, rw.cost.RoundTrips[k]))
				}
			}
			p("%s\t%s\t%.2f\t%s\t\n", rw.phase, backend, totals[backend], strings.Join(ops, ", "))
		}
	}
	if header {
		p("\n")
	}
}
