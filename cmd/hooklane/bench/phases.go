package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/subscription"
)

// Event types of the fan-out and matching phases.
const (
	FanOutEventType = "bench.fanout.created"
	MatchEventType  = "bench.match.created"
)

// sustained is the saturation criterion: every event scheduled was
// accepted and delivered, the delivered rate kept up with the offered one
// (within 10 %), and the p99 end-to-end latency stayed under the bound.
func (r *runner) sustained(l LatencyResult) bool {
	return l.Errors == 0 && l.Accepted == l.Scheduled && l.AllDelivered &&
		l.DeliveredPerSec >= 0.9*l.OfferedPerSec && l.P99Ms <= ms(r.cfg.SaturationP99)
}

// saturation searches the highest offered rate the gateway sustains:
// starting from the fixed-rate phases, it raises the rate by half while
// sustained, then bisects between the highest sustained and the lowest
// failed rate, for at most SaturationSteps steps of SaturationStep each.
func (r *runner) saturation(ctx context.Context) error {
	lo, hi := 0.0, math.Inf(1)
	for _, l := range r.rep.Latency {
		if l.Sustained {
			lo = max(lo, l.OfferedPerSec)
		} else {
			hi = min(hi, l.OfferedPerSec)
		}
	}
	next := func() float64 {
		switch {
		case math.IsInf(hi, 1) && lo == 0:
			return 500
		case math.IsInf(hi, 1):
			return lo * 1.5
		default:
			return (lo + hi) / 2
		}
	}
	sat := &SaturationResult{P99BoundMs: ms(r.cfg.SaturationP99)}
	r.rep.Saturation = sat
	for range r.cfg.SaturationSteps {
		if lo > 0 && hi/lo < 1.1 {
			break
		}
		rate := math.Round(next()/10) * 10
		if !r.fits(fmt.Sprintf("saturation step at %.0f/s", rate), r.cfg.SaturationStep+10*time.Second) {
			break
		}
		r.cfg.Logger.Info("saturation", "rate", rate)
		res, err := latencyPhase(ctx, r, r.nextFactory(), rate, r.cfg.SaturationStep)
		if err != nil {
			return err
		}
		res.Sustained = r.sustained(res)
		sat.Steps = append(sat.Steps, res)
		if res.Sustained {
			lo = rate
		} else {
			hi = rate
		}
	}
	sat.SustainedPerSec = lo
	if !math.IsInf(hi, 1) {
		sat.FailedPerSec = hi
	}
	if c := r.rep.loopbackCeiling(); c > 0 {
		sat.RatioToCeiling = lo / c
	}
	return nil
}

// fanOutConns is the concurrency of the fan-out and matching phases: 32
// when configured, else the first level.
func (r *runner) fanOutConns() int {
	for _, c := range r.cfg.Connections {
		if c == 32 {
			return c
		}
	}
	return r.cfg.Connections[0]
}

// fanOut measures one event type with FanOut subscriptions: closed-loop
// single-event ingest and the webhooks it causes.
func (r *runner) fanOut(ctx context.Context) error {
	if !r.fits("fan-out", r.cfg.Duration+10*time.Second) {
		return nil
	}
	if err := r.gw.ensureEventType(ctx, FanOutEventType); err != nil {
		return err
	}
	ids := make([]string, 0, r.cfg.FanOut)
	defer func() {
		for _, id := range ids {
			_ = r.gw.deleteSubscription(context.WithoutCancel(ctx), id)
		}
	}()
	for k := range r.cfg.FanOut {
		id, err := r.gw.subscribe(ctx, fmt.Sprintf("bench-%s-fan-%d", r.runID, k), FanOutEventType, r.recv.url+"/hook/"+strconv.Itoa(k))
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	conns, fan := r.fanOutConns(), int64(r.cfg.FanOut)
	f := r.nextFactory().withType(FanOutEventType)
	tr := newTracker(f.prefix, r.cfg.NowFunc(), 0, r.cfg.FanOut)
	r.recv.track(tr)
	defer r.recv.track(nil)
	r.cfg.Logger.Info("fan-out", "subscriptions", fan, "connections", conns)
	before := r.sampleCost()
	res, err := closedLoop(ctx, closedLoopSpec{
		url: r.gw.base + "/api/events", apiKey: r.gw.apiKey, conns: conns, perRequest: 1,
		duration: r.cfg.Duration, now: r.cfg.NowFunc,
		body:       func(seq int64) ([]byte, string) { return f.body(seq, 1), ctSingle },
		backlog:    func(accepted int64) int64 { return accepted*fan - tr.stats().unique },
		maxBacklog: r.cfg.MaxBacklog,
	})
	if err != nil {
		return fmt.Errorf("measure fan-out: %w", err)
	}
	drained, err := tr.waitFor(ctx, res.ok*fan, r.drainLimit())
	if err != nil {
		return fmt.Errorf("drain fan-out: %w", err)
	}
	cost := r.costSince(ctx, before)
	st := tr.stats()
	out := &FanOutResult{
		Subscriptions: r.cfg.FanOut, Connections: conns, Events: res.ok, Errors: res.failed, EventsPerSec: res.rate(),
		BacklogCapped: res.stoppedEarly, Webhooks: res.ok * fan, Delivered: st.unique, Duplicates: st.dups,
		AllDelivered: drained, Cost: cost.per1k(st.unique),
	}
	if st.last > 0 {
		out.WebhooksPerSec = float64(st.unique) / st.last.Seconds()
		out.DeliveredEventsPerSec = out.WebhooksPerSec / float64(fan)
	}
	if c := r.rep.loopbackCeiling(); c > 0 {
		out.WebhooksRatioToCeiling = out.WebhooksPerSec / c
	}
	r.rep.FanOut = out
	return nil
}

// matching grows the subscriptions to each of MatchSizes (one matches the
// measured event type; the others bind other exact types) and measures,
// at each size, closed-loop ingest of single events through the gateway
// and, in this process, the subscription index's match time for an index
// of that size.
func (r *runner) matching(ctx context.Context) error {
	if err := r.gw.ensureEventType(ctx, MatchEventType); err != nil {
		return err
	}
	hit, err := r.gw.subscribe(ctx, "bench-"+r.runID+"-match", MatchEventType, r.recv.url+"/hook")
	if err != nil {
		return err
	}
	var mu sync.Mutex
	ids := []string{hit}
	defer func() {
		if r.cfg.KeepSubscriptions {
			return
		}
		r.cfg.Logger.Info("matching: deleting subscriptions", "count", len(ids))
		err := forEach(context.WithoutCancel(ctx), len(ids), 16, func(ctx context.Context, i int) error {
			return r.gw.deleteSubscription(ctx, ids[i])
		})
		if err != nil {
			r.cfg.Logger.Warn("matching: subscriptions left behind", "error", err)
		}
	}()
	conns := r.fanOutConns()
	for _, size := range r.cfg.MatchSizes {
		// Creating subscriptions runs at about 1,000/s on a small machine.
		need := r.cfg.MatchDuration + 8*time.Second + time.Duration(size-len(ids))*time.Millisecond
		if !r.fits(fmt.Sprintf("matching at %d subscriptions", size), need) {
			break
		}
		from := len(ids)
		r.cfg.Logger.Info("matching: creating subscriptions", "from", from, "to", size)
		setupStart := r.cfg.NowFunc()
		err := forEach(ctx, size-from, 16, func(ctx context.Context, i int) error {
			n := from + i
			id, err := r.gw.subscribe(ctx, fmt.Sprintf("bench-%s-m%d", r.runID, n), fmt.Sprintf("bench.other.t%05d", n), r.recv.url+"/hook")
			if err != nil {
				return err
			}
			mu.Lock()
			ids = append(ids, id)
			mu.Unlock()
			return nil
		})
		if err != nil {
			return fmt.Errorf("grow subscriptions to %d: %w", size, err)
		}
		setup := r.cfg.NowFunc().Sub(setupStart)

		f := r.nextFactory().withType(MatchEventType)
		tr := newTracker(f.prefix, r.cfg.NowFunc(), 0, 1)
		r.recv.track(tr)
		before := r.sampleCost()
		res, err := closedLoop(ctx, closedLoopSpec{
			url: r.gw.base + "/api/events", apiKey: r.gw.apiKey, conns: conns, perRequest: 1,
			duration: r.cfg.MatchDuration, now: r.cfg.NowFunc,
			body:       func(seq int64) ([]byte, string) { return f.body(seq, 1), ctSingle },
			backlog:    func(accepted int64) int64 { return accepted - tr.stats().unique },
			maxBacklog: r.cfg.MaxBacklog,
		})
		if err != nil {
			r.recv.track(nil)
			return fmt.Errorf("measure matching at %d: %w", size, err)
		}
		drained, err := tr.waitFor(ctx, res.ok, r.drainLimit())
		r.recv.track(nil)
		if err != nil {
			return fmt.Errorf("drain matching at %d: %w", size, err)
		}
		cost := r.costSince(ctx, before)
		st := tr.stats()
		m := MatchResult{
			Subscriptions: size, SetupSeconds: setup.Seconds(), Events: res.ok, Errors: res.failed, EventsPerSec: res.rate(),
			Delivered: st.unique, AllDelivered: drained, Cost: cost.per1k(st.unique),
			IndexMatchMicros: indexMatchMicros(size),
		}
		if len(r.rep.Matching) > 0 {
			first := r.rep.Matching[0]
			if first.EventsPerSec > 0 {
				m.EventsRatio = m.EventsPerSec / first.EventsPerSec
			}
			if first.Cost.CPUSeconds > 0 {
				m.CPURatio = m.Cost.CPUSeconds / first.Cost.CPUSeconds
			}
			if first.IndexMatchMicros > 0 {
				m.IndexRatio = m.IndexMatchMicros / first.IndexMatchMicros
			}
		} else {
			m.EventsRatio, m.CPURatio, m.IndexRatio = 1, 1, 1
		}
		r.rep.Matching = append(r.rep.Matching, m)
	}
	r.cfg.Logger.Info("matching: client scale (in process)", "clients", ClientMatchClients)
	r.rep.ClientMatching = clientMatching()
	return nil
}

// forEach runs fn(0..n-1) on at most workers goroutines and returns the
// first error; after an error no new call starts.
func forEach(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	var next atomic.Int64
	var once sync.Once
	var first error
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// indexMatchMicros is the mean time of one subscription-index match, in
// µs, for an index of size subscriptions shaped like the matching phase's
// (one binds the event's type, the others other exact types).
func indexMatchMicros(size int) float64 {
	subs := make([]*subscription.Subscription, size)
	for i := range subs {
		typ := fmt.Sprintf("bench.other.t%05d", i)
		if i == 0 {
			typ = MatchEventType
		}
		subs[i] = &subscription.Subscription{
			ID: fmt.Sprintf("s%06d", i), Code: fmt.Sprintf("s%06d", i),
			Status: subscription.StatusActive, EventTypes: []subscription.Binding{{EventTypeCode: typ}},
		}
	}
	ix := subscription.NewIndex(subs)
	ev := &cloudevent.Event{SpecVersion: "1.0", ID: "e", Source: "/bench", Type: MatchEventType}
	// The best of several rounds: on a shared machine the others only add
	// the time this process was not running.
	const rounds, tries = 5000, 7
	best := time.Duration(math.MaxInt64)
	for range tries {
		start := time.Now()
		for range rounds {
			if len(ix.Match(ev, "")) != 1 {
				return 0
			}
		}
		best = min(best, time.Since(start))
	}
	return float64(best) / rounds / float64(time.Microsecond)
}

// soak offers SoakRate events/s for Soak, sampling the process's resident
// set every SoakSample.
func (r *runner) soak(ctx context.Context) error {
	r.deadline = r.cfg.NowFunc().Add(r.cfg.Soak + r.cfg.DrainTimeout)
	r.cfg.Logger.Info("soak", "rate", r.cfg.SoakRate, "duration", r.cfg.Soak)
	start := r.cfg.NowFunc()
	var samples []RSSSample
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(r.cfg.SoakSample)
		defer t.Stop()
		samples = append(samples, RSSSample{Seconds: 0, MiB: currentRSSMiB()})
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				samples = append(samples, RSSSample{Seconds: r.cfg.NowFunc().Sub(start).Seconds(), MiB: currentRSSMiB()})
			}
		}
	}()
	res, err := latencyPhase(ctx, r, r.nextFactory(), r.cfg.SoakRate, r.cfg.Soak)
	close(stop)
	<-done
	if err != nil {
		return err
	}
	s := &SoakResult{Seconds: r.cfg.Soak.Seconds(), Load: res, Samples: samples}
	s.summarise()
	r.rep.Soak = s
	return nil
}

// currentRSSMiB is the process's resident set now, from /proc/self/statm
// (0 where that file does not exist).
func currentRSSMiB() float64 {
	raw, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(raw))
	if len(fields) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		return 0
	}
	return float64(pages*int64(os.Getpagesize())) / (1 << 20)
}
