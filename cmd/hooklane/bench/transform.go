package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"
)

// PhaseTransform measures what a subscription's transformation (API.md
// §16) costs per delivered event: rounds of the same closed-loop load to a
// subscription without a transformation and to one with
// Config.TransformCode, interleaved. Not part of a default run: `hooklane
// bench --transform FILE` asks for it.
const PhaseTransform = "transform"

// Event types of the transform phase: one subscription each, so the two
// loads never share a subscription.
const (
	TransformPlainEventType = "bench.order.plain"
	TransformJSEventType    = "bench.order.transformed"
)

// transformRoundsDefault is how many interleaved rounds of each load the
// phase runs; the figures are their medians.
const transformRoundsDefault = 3

// transformWarmUp is the longest unmeasured load of each kind before the
// rounds.
const transformWarmUp = time.Second

// transformConns is the closed loop's concurrency: enough to keep two
// cores busy, few enough that the backlog stays short.
const transformConns = 8

// orderData is the data of the transform phase's events: an order of about
// 1 KB, the fields a typical transformation renames.
const orderData = `{"orderId":"o-1042","status":"created","currency":"EUR","total":129.95,"tax":21.65,` +
	`"customer":{"id":"c-77","name":"Ada Lovelace","email":"ada@example.com",` +
	`"address":{"street":"12 Analytical Row","city":"London","zip":"NW1 6XE","country":"GB"}},` +
	`"items":[{"sku":"SKU-001","name":"Difference engine gear","qty":2,"price":19.99},` +
	`{"sku":"SKU-002","name":"Punched card deck","qty":1,"price":49.99},` +
	`{"sku":"SKU-003","name":"Brass crank","qty":3,"price":13.33}],` +
	`"shipping":{"method":"express","carrier":"DHL","eta":"2026-10-03"},` +
	`"notes":"Leave at the reception desk; call ahead if the gate is closed.","tags":["priority","gift","eu"]}`

// TransformRound is one load of the transform phase.
type TransformRound struct {
	Transformed  bool    `json:"transformed"`
	Events       int64   `json:"events"`
	Errors       int64   `json:"errors"`
	Delivered    int64   `json:"delivered"`
	AllDelivered bool    `json:"allDelivered"`
	EventsPerSec float64 `json:"eventsPerSec"`
	Cost         Cost    `json:"cost"`
}

// TransformResult is the transform phase: each round, and the medians.
type TransformResult struct {
	Rounds []TransformRound `json:"rounds"`
	// PlainCPUMicros and TransformedCPUMicros are the median CPU time per
	// delivered event (the whole benchmark process: gateway, load
	// generator and receiver) without and with the transformation.
	PlainCPUMicros       float64 `json:"plainCpuMicrosPerEvent"`
	TransformedCPUMicros float64 `json:"transformedCpuMicrosPerEvent"`
	// ExtraCPUMicros is their difference: the transformation's cost per
	// delivered event; ExtraRatio is it over PlainCPUMicros.
	ExtraCPUMicros float64 `json:"extraCpuMicrosPerEvent"`
	ExtraRatio     float64 `json:"extraRatio"`
	// Trend is the least-squares fit of every round's CPU per event as a
	// straight line in the round's place plus the transformation's extra:
	// a round costs more as the store grows (often more per round than the
	// transformation itself), and the medians above take that growth for
	// part of the extra. Nil with fewer than four rounds.
	Trend *TransformTrend `json:"trend,omitempty"`
}

// TransformTrend is TransformResult.Trend.
type TransformTrend struct {
	// ExtraCPUMicros is the transformation's extra CPU per delivered
	// event, the growth taken out; ExtraRatio is it over the fitted plain
	// cost at the middle round.
	ExtraCPUMicros float64 `json:"extraCpuMicrosPerEvent"`
	ExtraRatio     float64 `json:"extraRatio"`
	// GrowthCPUMicros is how much a round's CPU per event grows from one
	// round to the next.
	GrowthCPUMicros float64 `json:"growthCpuMicrosPerRound"`
}

// transform runs the transform phase.
func (r *runner) transform(ctx context.Context) error {
	rounds := max(r.cfg.TransformRounds, 1)
	if !r.fits("transform", time.Duration(2*rounds)*(r.cfg.Duration+5*time.Second)+2*(transformWarmUp+5*time.Second)) {
		return nil
	}
	if r.cfg.TransformCode == "" {
		return errors.New("transform phase: no transformation code (--transform FILE)")
	}
	targets := map[bool]string{}
	for _, transformed := range []bool{false, true} {
		typ, code := TransformPlainEventType, ""
		if transformed {
			typ, code = TransformJSEventType, r.cfg.TransformCode
		}
		if err := r.gw.ensureEventType(ctx, typ); err != nil {
			return err
		}
		id, err := r.gw.subscribeTransformed(ctx, fmt.Sprintf("bench-%s-%s", r.runID, typ), typ, r.recv.url+"/count", code)
		if err != nil {
			return err
		}
		defer func() { _ = r.gw.deleteSubscription(context.WithoutCancel(ctx), id) }()
		targets[transformed] = typ
	}
	// A warm-up of each load, not measured: the engine makes its runtimes
	// and compiles the code on first use, and the store's and the HTTP
	// clients' caches fill.
	for _, transformed := range []bool{false, true} {
		f := r.nextFactory().withType(targets[transformed]).withData([]byte(orderData))
		if _, err := r.transformRound(ctx, f, min(r.cfg.Duration, transformWarmUp)); err != nil {
			return err
		}
	}
	res := &TransformResult{}
	for i := range 2 * rounds {
		transformed := transformedRound(i)
		f := r.nextFactory().withType(targets[transformed]).withData([]byte(orderData))
		round, err := r.transformRound(ctx, f, r.cfg.Duration)
		if err != nil {
			return err
		}
		round.Transformed = transformed
		res.Rounds = append(res.Rounds, round)
	}
	res.summarise()
	r.rep.Transform = res
	return nil
}

// transformedRound says whether round i runs the transformed load. The
// order is one plain, two transformed, one plain, repeated: the cost of
// a round grows as the store does, and alternating by pairs keeps either
// load from always coming second (plain-transformed pairs charged the
// transformed rounds about half a step of that growth, session 14).
func transformedRound(i int) bool { return i%4 == 1 || i%4 == 2 }

// transformRound is one closed-loop load of single events of f's type and
// its deliveries, counted by the receiver's /count path (a transformed body
// need not carry the event's id).
func (r *runner) transformRound(ctx context.Context, f *eventFactory, d time.Duration) (TransformRound, error) {
	tr := newTracker(f.prefix, r.cfg.NowFunc(), 0, 1)
	r.recv.track(tr)
	defer r.recv.track(nil)
	r.cfg.Logger.Info("transform", "event_type", f.typ)
	before := r.sampleCost()
	res, err := closedLoop(ctx, closedLoopSpec{
		url: r.gw.base + "/api/events", apiKey: r.gw.apiKey, conns: transformConns, perRequest: 1,
		duration: d, now: r.cfg.NowFunc,
		body:       func(seq int64) ([]byte, string) { return f.body(seq, 1), ctSingle },
		backlog:    func(accepted int64) int64 { return accepted - tr.stats().unique },
		maxBacklog: r.cfg.MaxBacklog,
	})
	if err != nil {
		return TransformRound{}, fmt.Errorf("measure transform: %w", err)
	}
	drained, err := tr.waitFor(ctx, res.ok, r.drainLimit())
	if err != nil {
		return TransformRound{}, fmt.Errorf("drain transform: %w", err)
	}
	cost := r.costSince(ctx, before)
	st := tr.stats()
	return TransformRound{
		Events: res.ok, Errors: res.failed, Delivered: st.unique, AllDelivered: drained && st.unique >= res.ok,
		EventsPerSec: res.rate(), Cost: cost.per1k(st.unique),
	}, nil
}

// summarise sets the medians and the transformation's share.
func (t *TransformResult) summarise() {
	var plain, js []float64
	for _, rd := range t.Rounds {
		micros := rd.Cost.CPUSeconds * 1000 // CPU s per 1k events = ms per event
		if rd.Transformed {
			js = append(js, micros)
		} else {
			plain = append(plain, micros)
		}
	}
	t.PlainCPUMicros, t.TransformedCPUMicros = median(plain), median(js)
	t.ExtraCPUMicros = t.TransformedCPUMicros - t.PlainCPUMicros
	if t.PlainCPUMicros > 0 {
		t.ExtraRatio = t.ExtraCPUMicros / t.PlainCPUMicros
	}
	t.Trend = fitTrend(t.Rounds)
}

// fitTrend fits cost = base + growth·i + extra·transformed over the rounds
// (i the round's place) by least squares; nil when the rounds cannot tell
// the three apart (fewer than four, or one kind only).
func fitTrend(rounds []TransformRound) *TransformTrend {
	if len(rounds) < 4 {
		return nil
	}
	// The normal equations of the three unknowns, solved by elimination.
	var a [3][4]float64
	for i, rd := range rounds {
		x := [3]float64{1, float64(i), 0}
		if rd.Transformed {
			x[2] = 1
		}
		y := rd.Cost.CPUSeconds * 1000
		for r := range 3 {
			for c := range 3 {
				a[r][c] += x[r] * x[c]
			}
			a[r][3] += x[r] * y
		}
	}
	for c := range 3 {
		p := c
		for r := c + 1; r < 3; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
				p = r
			}
		}
		if math.Abs(a[p][c]) < 1e-9 {
			return nil
		}
		a[c], a[p] = a[p], a[c]
		for r := range 3 {
			if r == c {
				continue
			}
			f := a[r][c] / a[c][c]
			for k := c; k < 4; k++ {
				a[r][k] -= f * a[c][k]
			}
		}
	}
	base, growth, extra := a[0][3]/a[0][0], a[1][3]/a[1][1], a[2][3]/a[2][2]
	t := &TransformTrend{ExtraCPUMicros: extra, GrowthCPUMicros: growth}
	if mid := base + growth*float64(len(rounds)-1)/2; mid > 0 {
		t.ExtraRatio = extra / mid
	}
	return t
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// subscribeTransformed creates a subscription to the exact type eventType
// running code ("" for none) and returns its id.
func (g *gatewayClient) subscribeTransformed(ctx context.Context, code, eventType, target, js string) (string, error) {
	body := map[string]any{
		"code": code, "name": "Hooklane benchmark (transform)",
		"eventTypes": []map[string]string{{"eventTypeCode": eventType}}, "target": target,
	}
	if js != "" {
		body["transformation"] = map[string]any{"code": js}
	}
	status, raw, err := g.call(ctx, http.MethodPost, "/api/subscriptions", body)
	if err != nil {
		return "", fmt.Errorf("create subscription: %w", err)
	}
	if status != http.StatusCreated {
		return "", fmt.Errorf("create subscription: answered %d: %s", status, raw)
	}
	return subscriptionID(raw)
}

// writeTransform writes the transform phase's rows.
func (r *Report) writeTransform(p func(format string, a ...any)) {
	x := r.Transform
	if x == nil {
		return
	}
	p("transform (closed loop, %d conns)\tround\ttransformed\tevents/s\tdelivered\tCPU µs/event\tMB alloc/1k\t\n", transformConns)
	for i, rd := range x.Rounds {
		p("\t%d\t%v\t%.0f\t%d/%d\t%.0f\t%.2f\t\n", i/2+1, rd.Transformed, rd.EventsPerSec, rd.Delivered, rd.Events,
			rd.Cost.CPUSeconds*1000, rd.Cost.AllocatedBytes/1e6)
	}
	p("transform (median)\tplain µs/event\ttransformed µs/event\textra µs/event\textra share\t\n")
	p("\t%.0f\t%.0f\t%.0f\t%.1f%%\t\n", x.PlainCPUMicros, x.TransformedCPUMicros, x.ExtraCPUMicros, 100*x.ExtraRatio)
	if t := x.Trend; t != nil {
		p("transform (growth taken out)\textra µs/event\textra share\tgrowth µs/event a round\t\n")
		p("\t%.0f\t%.1f%%\t%.0f\t\n", t.ExtraCPUMicros, 100*t.ExtraRatio, t.GrowthCPUMicros)
	}
	p("\n")
}

// transformProblems lists what makes the transform phase's figures unsound.
func (r *Report) transformProblems() []string {
	if r.Transform == nil {
		return nil
	}
	var out []string
	for i, rd := range r.Transform.Rounds {
		if rd.Events == 0 || rd.Errors > 0 || !rd.AllDelivered {
			out = append(out, fmt.Sprintf("transform round %d (transformed %v): %d events accepted, %d errors, %d delivered",
				i/2+1, rd.Transformed, rd.Events, rd.Errors, rd.Delivered))
		}
	}
	return out
}
