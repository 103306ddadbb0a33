package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// PhaseDestination measures delivery to one destination type (API.md §15,
// issue 31): closed-loop rounds of single events to a subscription whose
// destination is the broker (in process for kafka, nats and pubsub; the
// local stack's for sqs and rabbitmq) or, for webhook, the bench's HTTP
// receiver, each event counted when the broker's consumer reads it; then
// an open-loop load at DestinationRate for the ingest→delivery latency.
// Not part of a default run: `hooklane bench --destination TYPE` asks for
// it.
const PhaseDestination = "destination"

// DestinationEventType is the destination phase's event type.
const DestinationEventType = "bench.order.destination"

// Defaults of the destination phase.
const (
	destinationRoundsDefault = 3
	destinationRateDefault   = 200
	// destinationConns is the closed loop's concurrency, as the
	// transform phase's.
	destinationConns = 8
	// destinationWarmUp is the longest unmeasured load before the rounds.
	destinationWarmUp = time.Second
)

// DestinationResult is the destination phase.
type DestinationResult struct {
	Type string `json:"type"`
	// InProcessBroker says the broker ran in the bench's process, so
	// its CPU (and its consumer's) is in Cost; the webhook's receiver is
	// in process too. Not for sqs and rabbitmq (the local stack's).
	InProcessBroker bool           `json:"inProcessBroker"`
	Rounds          []IngestResult `json:"rounds"`
	Latency         *LatencyResult `json:"latency,omitempty"`
	// EventsPerSec, DeliveredPerSec and CPUMillisPerEvent are the
	// rounds' medians: accepted events/s, delivered events/s (arrivals
	// over the time to the last one) and the process's CPU time per
	// delivered event.
	EventsPerSec      float64 `json:"eventsPerSec"`
	DeliveredPerSec   float64 `json:"deliveredPerSec"`
	CPUMillisPerEvent float64 `json:"cpuMillisPerEvent"`
}

// destination runs the destination phase.
func (r *runner) destination(ctx context.Context) error {
	rounds := max(r.cfg.DestinationRounds, 1)
	if !r.fits("destination", time.Duration(rounds+2)*(r.cfg.Duration+5*time.Second)+destinationWarmUp) {
		return nil
	}
	typ := r.cfg.Destination
	if typ == "" {
		return errors.New("destination phase: no destination type (--destination)")
	}
	res := &DestinationResult{Type: typ, InProcessBroker: typ != DestinationSQS && typ != DestinationRabbitMQ}
	if err := r.gw.ensureEventType(ctx, DestinationEventType); err != nil {
		return err
	}
	code := "bench-" + r.runID + "-dest"
	var dest json.RawMessage
	if typ != DestinationWebhook {
		b, err := startBroker(ctx, &r.cfg, typ, "hooklane-bench-"+r.runID, r.arriveMessage)
		if err != nil {
			return fmt.Errorf("destination phase: %w", err)
		}
		defer b.close()
		dest = b.raw
	}
	id, err := r.gw.subscribeDestination(ctx, code, DestinationEventType, r.recv.url+"/hook", dest)
	if err != nil {
		return err
	}
	defer func() { _ = r.gw.deleteSubscription(context.WithoutCancel(ctx), id) }()
	// A warm-up, not measured: the broker's client connects, the
	// consumer starts reading, the caches fill.
	r.cfg.Logger.Info("destination", "type", typ, "step", "warm-up")
	warm := r.cfg
	warm.Duration = min(r.cfg.Duration, destinationWarmUp)
	if _, err := ingestPhase(ctx, &runner{cfg: warm, rep: r.rep, recv: r.recv, gw: r.gw, deadline: r.deadline},
		r.nextFactory().withType(DestinationEventType), 1, destinationConns); err != nil {
		return err
	}
	for range rounds {
		r.cfg.Logger.Info("destination", "type", typ, "step", "round")
		round, err := ingestPhase(ctx, r, r.nextFactory().withType(DestinationEventType), 1, destinationConns)
		if err != nil {
			return err
		}
		res.Rounds = append(res.Rounds, round)
	}
	if r.cfg.DestinationRate > 0 {
		r.cfg.Logger.Info("destination", "type", typ, "step", "latency")
		lat, err := latencyPhase(ctx, r, r.nextFactory().withType(DestinationEventType), r.cfg.DestinationRate, r.cfg.Duration)
		if err != nil {
			return err
		}
		res.Latency = &lat
	}
	res.summarise()
	r.rep.Destination = res
	return nil
}

// arriveMessage counts a message a broker's consumer read: its body is
// the structured CloudEvent, whose id names the event.
func (r *runner) arriveMessage(body []byte) {
	at := r.cfg.NowFunc()
	var ev struct {
		ID string `json:"id"`
	}
	t := r.recv.cur.Load()
	if json.Unmarshal(body, &ev) != nil || t == nil || !t.arrive(ev.ID, 0, at) {
		r.recv.stray.Add(1)
	}
}

// summarise sets the medians.
func (d *DestinationResult) summarise() {
	var eps, dps, cpu []float64
	for _, rd := range d.Rounds {
		eps = append(eps, rd.EventsPerSec)
		dps = append(dps, rd.DeliveredPerSec)
		cpu = append(cpu, rd.Cost.CPUSeconds) // CPU s per 1k events = ms per event
	}
	d.EventsPerSec, d.DeliveredPerSec, d.CPUMillisPerEvent = median(eps), median(dps), median(cpu)
}

// subscribeDestination creates a subscription to the exact type
// eventType delivering to dest, or to target when dest is nil.
func (g *gatewayClient) subscribeDestination(ctx context.Context, code, eventType, target string, dest json.RawMessage) (string, error) {
	body := map[string]any{
		"code": code, "name": "Hooklane benchmark (destination)",
		"eventTypes": []map[string]string{{"eventTypeCode": eventType}},
	}
	if dest != nil {
		body["destination"] = dest
	} else {
		body["target"] = target
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

// writeDestination writes the destination phase's rows.
func (r *Report) writeDestination(p func(format string, a ...any)) {
	x := r.Destination
	if x == nil {
		return
	}
	broker := "in process"
	if !x.InProcessBroker {
		broker = "local stack"
	}
	p("destination %s (broker %s; closed loop, %d conns)\tround\tevents/s\tdelivered/s\tdelivered\tCPU ms/event\t\n", x.Type, broker, destinationConns)
	for i, rd := range x.Rounds {
		p("\t%d\t%.0f\t%.0f\t%d/%d\t%.3f\t\n", i+1, rd.EventsPerSec, rd.DeliveredPerSec, rd.Delivered, rd.Events, rd.Cost.CPUSeconds)
	}
	p("destination %s (median)\tevents/s\tdelivered/s\tCPU ms/event\t\n", x.Type)
	p("\t%.0f\t%.0f\t%.3f\t\n", x.EventsPerSec, x.DeliveredPerSec, x.CPUMillisPerEvent)
	if l := x.Latency; l != nil {
		p("destination %s (open loop)\toffered/s\tdelivered\tp50 ms\tp99 ms\tmax ms\t\n", x.Type)
		p("\t%.0f\t%d/%d\t%.1f\t%.1f\t%.1f\t\n", l.OfferedPerSec, l.Delivered, l.Accepted, l.P50Ms, l.P99Ms, l.MaxMs)
	}
	p("\n")
}

// destinationProblems lists what makes the destination phase's figures
// unsound.
func (r *Report) destinationProblems() []string {
	x := r.Destination
	if x == nil {
		return nil
	}
	var out []string
	for i, rd := range x.Rounds {
		if rd.Events == 0 || rd.Errors > 0 || !rd.AllDelivered {
			out = append(out, fmt.Sprintf("destination %s round %d: %d events accepted, %d errors, %d delivered",
				x.Type, i+1, rd.Events, rd.Errors, rd.Delivered))
		}
	}
	if l := x.Latency; l != nil && (l.Accepted == 0 || l.Errors > 0 || !l.AllDelivered) {
		out = append(out, fmt.Sprintf("destination %s open loop: %d events accepted, %d errors, %d delivered",
			x.Type, l.Accepted, l.Errors, l.Delivered))
	}
	return out
}

// ValidDestination checks a --destination value.
func ValidDestination(typ string) error {
	if slices.Contains(DestinationTypes(), typ) {
		return nil
	}
	return fmt.Errorf("unknown destination %q (one of %s)", typ, strings.Join(DestinationTypes(), ", "))
}
