package bench

import (
	"fmt"
	"io"
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
	StartedAt    time.Time       `json:"startedAt"`
	FinishedAt   time.Time       `json:"finishedAt"`
	Target       string          `json:"target"`
	Machine      Machine         `json:"machine"`
	PayloadBytes int             `json:"payloadBytes"`
	BatchSize    int             `json:"batchSize"`
	PhaseSeconds float64         `json:"phaseSeconds"`
	Ceiling      []CeilingResult `json:"ceiling"`
	Ingest       []IngestResult  `json:"ingest"`
	Latency      []LatencyResult `json:"latency"`
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
	P50Ms           float64 `json:"p50Ms"`
	P90Ms           float64 `json:"p90Ms"`
	P99Ms           float64 `json:"p99Ms"`
	P999Ms          float64 `json:"p999Ms"`
	MaxMs           float64 `json:"maxMs"`
	Cost            Cost    `json:"cost"`
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
}

func sampleCost() costSample {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return costSample{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), alloc: ms.TotalAlloc}
}

func (c costSample) since(before costSample) costSample {
	return costSample{cpu: c.cpu - before.cpu, alloc: c.alloc - before.alloc}
}

func (c costSample) per1k(events int64) Cost {
	if events <= 0 {
		return Cost{}
	}
	k := float64(events) / 1000
	return Cost{CPUSeconds: c.cpu.Seconds() / k, AllocatedBytes: float64(c.alloc) / k}
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
	p("Hooklane bench\t %s\t %d CPUs\t %s\t payload %d B\t phase %.0fs\t\n", r.Machine.CPUModel, r.Machine.CPUs,
		r.Machine.GoVersion, r.PayloadBytes, r.PhaseSeconds)
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
	p("end to end (open loop)\toffered/s\taccepted\terrors\tdelivered\tp50 ms\tp90 ms\tp99 ms\tp99.9 ms\tmax ms\tCPU s/1k\tMB alloc/1k\t\n")
	for _, l := range r.Latency {
		p("\t%.0f\t%d/%d\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.3f\t%.1f\t\n", l.OfferedPerSec, l.Accepted, l.Scheduled, l.Errors,
			l.Delivered, l.P50Ms, l.P90Ms, l.P99Ms, l.P999Ms, l.MaxMs, l.Cost.CPUSeconds, l.Cost.AllocatedBytes/1e6)
	}
	p("\n")
	p("peak RSS\t%.0f MiB\t\n", float64(r.PeakRSSBytes)/(1<<20))
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
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
			out = append(out, fmt.Sprintf("ingest batch %d conns %d: %d events accepted, %d errors, %d delivered",
				i.Batch, i.Connections, i.Events, i.Errors, i.Delivered))
		}
	}
	for _, l := range r.Latency {
		if l.Accepted == 0 || l.Errors > 0 || !l.AllDelivered {
			out = append(out, fmt.Sprintf("latency at %.0f/s: %d of %d accepted, %d errors, %d delivered",
				l.OfferedPerSec, l.Accepted, l.Scheduled, l.Errors, l.Delivered))
		}
	}
	return out
}
