package bench

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
)

// Comparison is one figure measured in two runs.
type Comparison struct {
	// Figure names the measurement ("ingest batch=1 conns=8 events/s").
	Figure string
	Before float64
	After  float64
	// HigherIsBetter says which way is an improvement.
	HigherIsBetter bool
}

// Ratio is After / Before (NaN when Before is 0).
func (c Comparison) Ratio() float64 {
	if c.Before == 0 {
		return math.NaN()
	}
	return c.After / c.Before
}

// Better reports whether the change is an improvement.
func (c Comparison) Better() bool {
	if c.HigherIsBetter {
		return c.After > c.Before
	}
	return c.After < c.Before
}

// Compare pairs the figures that both reports measured — the loopback
// ceiling, each closed-loop ingest configuration, each open-loop rate, the
// saturation rate, fan-out, matching and the soak — in the order of the
// report. A figure only one report has is left out. Throughputs are also
// compared as ratios to each run's own ceiling, which takes out most of the
// difference between two machines or two loads of one.
func Compare(before, after *Report) []Comparison {
	var out []Comparison
	add := func(fig string, b, a float64, higher bool) {
		out = append(out, Comparison{Figure: fig, Before: b, After: a, HigherIsBetter: higher})
	}
	add("loopback ceiling req/s", before.loopbackCeiling(), after.loopbackCeiling(), true)
	for _, a := range after.Ingest {
		for _, b := range before.Ingest {
			if a.Batch != b.Batch || a.Connections != b.Connections {
				continue
			}
			k := fmt.Sprintf("ingest batch=%d conns=%d", a.Batch, a.Connections)
			add(k+" events/s", b.EventsPerSec, a.EventsPerSec, true)
			add(k+" events/s ÷ ceiling", b.RatioToCeiling, a.RatioToCeiling, true)
			add(k+" delivered/s", b.DeliveredPerSec, a.DeliveredPerSec, true)
			add(k+" delivered/s ÷ ceiling", b.DeliveryRatioToCeiling, a.DeliveryRatioToCeiling, true)
			add(k+" CPU s per 1k", b.Cost.CPUSeconds, a.Cost.CPUSeconds, false)
			add(k+" bytes allocated per 1k", b.Cost.AllocatedBytes, a.Cost.AllocatedBytes, false)
		}
	}
	for _, a := range after.Latency {
		for _, b := range before.Latency {
			if a.OfferedPerSec != b.OfferedPerSec {
				continue
			}
			k := fmt.Sprintf("open loop %.0f/s", a.OfferedPerSec)
			add(k+" p50 ms", b.P50Ms, a.P50Ms, false)
			add(k+" p99 ms", b.P99Ms, a.P99Ms, false)
			add(k+" CPU s per 1k", b.Cost.CPUSeconds, a.Cost.CPUSeconds, false)
		}
	}
	if before.Saturation != nil && after.Saturation != nil {
		add("saturation sustained/s", before.Saturation.SustainedPerSec, after.Saturation.SustainedPerSec, true)
		add("saturation ÷ ceiling", before.Saturation.RatioToCeiling, after.Saturation.RatioToCeiling, true)
	}
	if before.FanOut != nil && after.FanOut != nil && before.FanOut.Subscriptions == after.FanOut.Subscriptions {
		k := fmt.Sprintf("fan-out 1→%d", after.FanOut.Subscriptions)
		add(k+" webhooks/s", before.FanOut.WebhooksPerSec, after.FanOut.WebhooksPerSec, true)
		add(k+" CPU s per 1k webhooks", before.FanOut.Cost.CPUSeconds, after.FanOut.Cost.CPUSeconds, false)
	}
	for _, a := range after.Matching {
		for _, b := range before.Matching {
			if a.Subscriptions == b.Subscriptions {
				add(fmt.Sprintf("matching %d subscriptions µs per match", a.Subscriptions), b.IndexMatchMicros, a.IndexMatchMicros, false)
			}
		}
	}
	if before.Soak != nil && after.Soak != nil {
		add("soak RSS MiB at the end", before.Soak.LastMiB, after.Soak.LastMiB, false)
		add("soak RSS slope MiB/min", before.Soak.SlopeMiBPerMin, after.Soak.SlopeMiBPerMin, false)
	}
	add("peak RSS MiB", float64(before.PeakRSSBytes)/(1<<20), float64(after.PeakRSSBytes)/(1<<20), false)
	return out
}

// WriteComparison prints the comparisons as a table: figure, before,
// after, after/before, and whether that is better.
func WriteComparison(w io.Writer, cs []Comparison) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "figure\tbefore\tafter\tafter/before\t\t")
	for _, c := range cs {
		verdict := ""
		switch r := c.Ratio(); {
		case math.IsNaN(r), c.Before == c.After:
		case c.Better():
			verdict = "better"
		default:
			verdict = "worse"
		}
		fmt.Fprintf(tw, "%s\t%.4g\t%.4g\t%.3f\t%s\t\n", c.Figure, c.Before, c.After, c.Ratio(), verdict)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	return nil
}
