package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// EventType is the event type code every benchmark event carries.
const EventType = "bench.event.created"

const (
	ctSingle = "application/cloudevents+json"
	ctBatch  = "application/cloudevents-batch+json"
)

func contentType(batch int) string {
	if batch > 1 {
		return ctBatch
	}
	return ctSingle
}

// eventFactory writes CloudEvents whose id is prefix+sequence number, so a
// delivery names the request that caused it.
type eventFactory struct {
	source string
	prefix string
	typ    string
	data   []byte
}

func newEventFactory(runID string, payloadBytes int) *eventFactory {
	// data is {"pad":"xxx…"}, payloadBytes long in all (at least the frame).
	const frame = len(`{"pad":""}`)
	pad := max(payloadBytes-frame, 0)
	data := make([]byte, 0, frame+pad)
	data = append(data, `{"pad":"`...)
	data = append(data, bytes.Repeat([]byte("x"), pad)...)
	data = append(data, `"}`...)
	return &eventFactory{source: "/bench/" + runID, typ: EventType, data: data}
}

// withType is f with events of type typ.
func (f *eventFactory) withType(typ string) *eventFactory {
	c := *f
	c.typ = typ
	return &c
}

// withData is f with events whose data is data (a JSON value).
func (f *eventFactory) withData(data []byte) *eventFactory {
	c := *f
	c.data = data
	return &c
}

func (f *eventFactory) withPrefix(p string) *eventFactory {
	c := *f
	c.prefix = p
	return &c
}

func (f *eventFactory) appendEvent(b []byte, seq int64) []byte {
	b = append(b, `{"specversion":"1.0","id":"`...)
	b = append(b, f.prefix...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `","source":"`...)
	b = append(b, f.source...)
	b = append(b, `","type":"`...)
	b = append(b, f.typ...)
	b = append(b, `","data":`...)
	b = append(b, f.data...)
	return append(b, '}')
}

// body returns the request body of n events numbered from seq on.
func (f *eventFactory) body(seq int64, n int) []byte {
	if n <= 1 {
		return f.appendEvent(make([]byte, 0, 160+len(f.data)), seq)
	}
	b := make([]byte, 0, n*(161+len(f.data))+2)
	b = append(b, '[')
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = f.appendEvent(b, seq+int64(i))
	}
	return append(b, ']')
}

// sampleBody is a body of the size real requests have, for the ceiling.
func (f *eventFactory) sampleBody(n int) []byte {
	return f.withPrefix("ceiling-").body(1_000_000_000, n)
}

func newTransport(conns int) *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		IdleConnTimeout:     30 * time.Second,
		// A batch of 100 events (about 40 KB) fits the write buffer whole;
		// with the default 4 KiB, net/http copies each larger body through
		// a fresh 32 KiB buffer, garbage the cost figures would count.
		WriteBufferSize: 64 << 10,
	}
}

type closedLoopSpec struct {
	url        string
	apiKey     string
	conns      int
	perRequest int64
	duration   time.Duration
	now        func() time.Time
	body       func(seq int64) ([]byte, string)
	// backlog, when set, is how many accepted events (of n accepted) still
	// wait for delivery; the loop stops early once it exceeds maxBacklog.
	backlog    func(accepted int64) int64
	maxBacklog int64
}

type loopResult struct {
	ok, failed int64
	elapsed    time.Duration
	// stoppedEarly is true when the backlog cap ended the loop.
	stoppedEarly bool
}

func (r loopResult) rate() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.ok) / r.elapsed.Seconds()
}

// post sends one request and reports whether the answer was 200 or 201.
func post(ctx context.Context, c *http.Client, url, apiKey string, body []byte, ct string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", ct)
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := c.Do(req)
	if err != nil {
		return false, fmt.Errorf("post: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusCreated, nil
}

// closedLoop runs conns workers that each send a request as soon as the
// previous one is answered, for the spec's duration.
func closedLoop(ctx context.Context, s closedLoopSpec) (loopResult, error) {
	tr := newTransport(s.conns)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	per := max(s.perRequest, 1)
	var seq, ok, failed, inFlight atomic.Int64
	var early atomic.Bool
	start := s.now()
	deadline := start.Add(s.duration)
	runCtx, cancel := context.WithDeadline(ctx, deadline.Add(30*time.Second))
	defer cancel()
	var wg sync.WaitGroup
	for range s.conns {
		wg.Go(func() {
			for s.now().Before(deadline) && runCtx.Err() == nil && !early.Load() {
				// Events in flight count as accepted: the backlog stays
				// under the cap whatever the concurrency (but every
				// connection may have one request out).
				if s.backlog != nil && s.backlog((ok.Load()+inFlight.Load())*per) > max(s.maxBacklog, int64(s.conns)*per) {
					early.Store(true)
					break
				}
				n := seq.Add(per) - per
				body, ct := s.body(n)
				inFlight.Add(1)
				good, err := post(runCtx, client, s.url, s.apiKey, body, ct)
				inFlight.Add(-1)
				if good {
					ok.Add(1)
				} else if err == nil || runCtx.Err() == nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return loopResult{}, fmt.Errorf("run closed loop: %w", err)
	}
	return loopResult{ok: ok.Load(), failed: failed.Load(), elapsed: s.now().Sub(start), stoppedEarly: early.Load()}, nil
}

// openLoop sends n single-event requests on a fixed timetable, request i at
// start+i*interval, whether or not earlier ones were answered. At most
// conns are in flight; a request that waits for a free connection is late,
// and the lateness counts in its latency (no coordinated omission).
func openLoop(ctx context.Context, url, apiKey string, conns int, n int64, start time.Time, interval time.Duration,
	now func() time.Time, body func(seq int64) []byte,
) (ok, failed int64, err error) {
	tr := newTransport(conns)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var okN, failN atomic.Int64
	work := make(chan int64, n)
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			for i := range work {
				good, _ := post(ctx, client, url, apiKey, body(i), ctSingle)
				if good {
					okN.Add(1)
				} else {
					failN.Add(1)
				}
			}
		})
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
schedule:
	for i := range n {
		if d := start.Add(time.Duration(i) * interval).Sub(now()); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				break schedule
			}
		}
		work <- i
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return 0, 0, fmt.Errorf("run open loop: %w", err)
	}
	return okN.Load(), failN.Load(), nil
}

// ingestPhase measures closed-loop ingest at one batch size and
// concurrency, then waits for the deliveries it caused.
func ingestPhase(ctx context.Context, r *runner, f *eventFactory, batch, conns int) (IngestResult, error) {
	cfg := r.cfg
	tr := newTracker(f.prefix, cfg.NowFunc(), 0, 1)
	r.recv.track(tr)
	defer r.recv.track(nil)
	before := r.sampleCost()
	res, err := closedLoop(ctx, closedLoopSpec{
		url: r.gw.base + "/api/events", apiKey: r.gw.apiKey, conns: conns, perRequest: int64(batch),
		duration: cfg.Duration, now: cfg.NowFunc,
		body:       func(seq int64) ([]byte, string) { return f.body(seq, batch), contentType(batch) },
		backlog:    func(accepted int64) int64 { return accepted - tr.stats().unique },
		maxBacklog: cfg.MaxBacklog,
	})
	if err != nil {
		return IngestResult{}, fmt.Errorf("measure ingest: %w", err)
	}
	accepted := res.ok * int64(batch)
	drained, err := tr.waitFor(ctx, accepted, r.drainLimit())
	if err != nil {
		return IngestResult{}, fmt.Errorf("drain ingest: %w", err)
	}
	cost := r.costSince(ctx, before)
	st := tr.stats()
	out := IngestResult{
		Batch: batch, Connections: conns, Requests: res.ok, Errors: res.failed, Events: accepted,
		RequestsPerSec: res.rate(), EventsPerSec: res.rate() * float64(batch), LoadSeconds: res.elapsed.Seconds(),
		BacklogCapped: res.stoppedEarly, Delivered: st.unique, Duplicates: st.dups, AllDelivered: drained,
		DrainSeconds: max(st.last-res.elapsed, 0).Seconds(),
	}
	if st.last > 0 {
		out.DeliveredPerSec = float64(st.unique) / st.last.Seconds()
	}
	out.Cost = cost.per1k(st.unique)
	return out, nil
}

// latencyPhase offers rate events/s for d and measures each event's time
// from its scheduled send to its arrival.
func latencyPhase(ctx context.Context, r *runner, f *eventFactory, rate float64, d time.Duration) (LatencyResult, error) {
	cfg := r.cfg
	n := max(int64(rate*d.Seconds()), 1)
	interval := time.Duration(float64(time.Second) / rate)
	start := cfg.NowFunc().Add(10 * time.Millisecond)
	tr := newTracker(f.prefix, start, interval, 1)
	r.recv.track(tr)
	defer r.recv.track(nil)
	before := r.sampleCost()
	ok, failed, err := openLoop(ctx, r.gw.base+"/api/events", r.gw.apiKey, cfg.OpenLoopConnections, n, start, interval,
		cfg.NowFunc, func(seq int64) []byte { return f.body(seq, 1) })
	if err != nil {
		return LatencyResult{}, fmt.Errorf("measure latency: %w", err)
	}
	drained, err := tr.waitFor(ctx, ok, r.drainLimit())
	if err != nil {
		return LatencyResult{}, fmt.Errorf("drain latency phase: %w", err)
	}
	cost := r.costSince(ctx, before)
	st := tr.stats()
	lat := tr.latencies()
	out := LatencyResult{
		OfferedPerSec: rate, Scheduled: n, Accepted: ok, Errors: failed, Delivered: st.unique,
		Duplicates: st.dups, AllDelivered: drained, Cost: cost.per1k(st.unique),
	}
	if st.last > 0 {
		out.DeliveredPerSec = float64(st.unique) / st.last.Seconds()
	}
	if c := r.rep.loopbackCeiling(); c > 0 {
		out.RatioToCeiling = out.DeliveredPerSec / c
	}
	out.P50Ms, out.P90Ms, out.P99Ms, out.P999Ms, out.MaxMs = ms(percentile(lat, 0.50)), ms(percentile(lat, 0.90)),
		ms(percentile(lat, 0.99)), ms(percentile(lat, 0.999)), ms(percentile(lat, 1))
	return out, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
