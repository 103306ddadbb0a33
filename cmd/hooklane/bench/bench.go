// Package bench is the harness behind `hooklane bench`: it measures the
// machine's loopback HTTP ceiling, then a gateway's ingest throughput,
// delivery throughput, open-loop end-to-end latency at fixed rates, the
// saturation throughput, fan-out, matching scale, cost per event and (on
// request) memory over a soak, against a local webhook receiver on
// 127.0.0.1. Every run is bounded by a total time budget.
package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// Phase names, for Config.Phases.
const (
	PhaseIngest     = "ingest"
	PhaseLatency    = "latency"
	PhaseSaturation = "saturation"
	PhaseFanOut     = "fanout"
	PhaseMatching   = "matching"
	// PhaseReplay backfills a subscription from ReplayEvents stored events
	// under live load (bench/replay.go). Not part of a default run: it
	// takes a minute or more; ask for it with Phases.
	PhaseReplay = "replay"
)

// AllPhases returns the phases of a default run, in the order they run.
// The ceiling always runs first (every rate is also given as a ratio to
// it); the soak runs last, when Config.Soak is set.
func AllPhases() []string {
	return []string{PhaseIngest, PhaseLatency, PhaseSaturation, PhaseFanOut, PhaseMatching}
}

// Config sets what one benchmark run measures. Zero fields take the
// defaults of Defaults.
type Config struct {
	// BaseURL is the gateway under test, e.g. http://127.0.0.1:8080.
	BaseURL string
	// APIKey, when set, is sent as a Bearer token (admin role needed for setup).
	APIKey string
	// Mode names what the gateway runs on (embedded, mongo-sqs, url); a label for the report.
	Mode string
	// Phases are the phases to run (AllPhases when empty).
	Phases []string
	// Budget bounds the whole run, soak excluded: a phase that no longer
	// fits is skipped with a note, and every drain ends by the budget.
	Budget time.Duration
	// Duration is how long each measured phase offers load.
	Duration time.Duration
	// DrainTimeout bounds the wait for deliveries after a phase's load stops.
	DrainTimeout time.Duration
	// MaxBacklog stops a closed-loop phase early once this many accepted
	// events (webhooks, for fan-out) wait for delivery, so its drain stays short.
	MaxBacklog int64
	// Connections are the closed-loop concurrency levels.
	Connections []int
	// Rates are the open-loop offered rates in events per second.
	Rates []float64
	// OpenLoopConnections caps the requests in flight during open-loop phases.
	OpenLoopConnections int
	// PayloadBytes is the size of each event's data.
	PayloadBytes int
	// BatchSize is the number of events in one batch request.
	BatchSize int
	// IngestBatches are the batch sizes of the ingest phase, each 1 (single
	// events) or BatchSize; empty means both, single events first.
	IngestBatches []int
	// BeforePhasesFunc, when set, is called once after the ceiling was
	// measured and before the first phase against the gateway: the bench
	// command starts its CPU profile there, so that the profile shows the
	// gateway and not the no-op server of the ceiling.
	BeforePhasesFunc func() error
	// SaturationSteps is the most offered rates the saturation search tries.
	SaturationSteps int
	// SaturationStep is the load time of one saturation step.
	SaturationStep time.Duration
	// SaturationP99 is the p99 end-to-end latency a sustained rate must stay under.
	SaturationP99 time.Duration
	// FanOut is the number of subscriptions of the fan-out phase's event type.
	FanOut int
	// MatchSizes are the subscription counts of the matching phase.
	MatchSizes []int
	// MatchDuration is the load time at each matching size.
	MatchDuration time.Duration
	// KeepSubscriptions leaves the matching phase's subscriptions in place
	// (an in-process gateway is thrown away after the run).
	KeepSubscriptions bool
	// Soak, when positive, adds a soak of this length at SoakRate that
	// samples the process's RSS every SoakSample.
	Soak       time.Duration
	SoakRate   float64
	SoakSample time.Duration
	// ReplayEvents is the stored history of the replay phase.
	ReplayEvents int
	// ReplayLiveRate and ReplayLiveDuration are the live load offered
	// while the replay runs.
	ReplayLiveRate     float64
	ReplayLiveDuration time.Duration
	// ReplayTimeout bounds the wait for the replay to complete.
	ReplayTimeout time.Duration
	// TransformCode is the transformation the transform phase measures
	// (API.md §16: the source of function handler(webhook)).
	TransformCode string
	// TransformRounds is how many interleaved rounds of each load the
	// transform phase runs (default 3); its figures are their medians.
	TransformRounds int
	// Destination is the destination type the destination phase
	// delivers to (DestinationTypes).
	Destination string
	// DestinationRounds is how many closed-loop rounds the destination
	// phase runs (default 3); its figures are their medians.
	DestinationRounds int
	// DestinationRate is the open-loop rate (events/s) of the
	// destination phase's latency load (default 200; negative: none).
	DestinationRate float64
	// SQSEndpoint and AMQPURL are the brokers of the sqs and rabbitmq
	// destinations (the local stack's).
	SQSEndpoint, AMQPURL string
	// RoundTrips, when set, returns the gateway's round trips to its
	// backends so far, by "backend:operation" (cumulative counts, safe for
	// concurrent use); every phase then reports them per delivered event
	// (Cost.RoundTrips). An in-process gateway on MongoDB and SQS sets it.
	RoundTrips func() map[string]int64
	// Logger receives progress lines.
	Logger *slog.Logger
	// NowFunc is the clock; time.Now when nil.
	NowFunc func() time.Time
}

// Defaults returns the configuration of a full run (under 3 minutes).
func Defaults() Config {
	return Config{
		Phases:              AllPhases(),
		Budget:              170 * time.Second,
		Duration:            3 * time.Second,
		DrainTimeout:        30 * time.Second,
		MaxBacklog:          8000,
		Connections:         []int{8, 32, 128},
		Rates:               []float64{500, 1000, 2000},
		OpenLoopConnections: 64,
		PayloadBytes:        256,
		BatchSize:           100,
		SaturationSteps:     6,
		SaturationStep:      2 * time.Second,
		SaturationP99:       100 * time.Millisecond,
		FanOut:              10,
		MatchSizes:          []int{10, 100, 1000, 10000},
		MatchDuration:       2 * time.Second,
		SoakRate:            1000,
		SoakSample:          5 * time.Second,
		ReplayEvents:        100_000,
		ReplayLiveRate:      500,
		ReplayLiveDuration:  10 * time.Second,
		ReplayTimeout:       5 * time.Minute,
	}
}

// Short returns the configuration of a smoke run of a few seconds in all.
func Short() Config {
	c := Defaults()
	c.Phases = []string{PhaseIngest, PhaseLatency, PhaseFanOut, PhaseMatching}
	c.Budget = 60 * time.Second
	c.Duration = 1 * time.Second
	c.DrainTimeout = 20 * time.Second
	c.Connections = []int{8}
	c.Rates = []float64{200}
	c.MatchSizes = []int{10, 100}
	c.MatchDuration = 500 * time.Millisecond
	c.ReplayEvents = 2000
	c.ReplayLiveDuration = 2 * time.Second
	return c
}

func (c *Config) fill() error {
	d := Defaults()
	if c.BaseURL == "" {
		return errors.New("check config: no gateway URL")
	}
	pos := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	pos(&c.Budget, d.Budget)
	pos(&c.Duration, d.Duration)
	pos(&c.DrainTimeout, d.DrainTimeout)
	pos(&c.SaturationStep, d.SaturationStep)
	pos(&c.SaturationP99, d.SaturationP99)
	pos(&c.MatchDuration, d.MatchDuration)
	pos(&c.SoakSample, d.SoakSample)
	pos(&c.ReplayLiveDuration, d.ReplayLiveDuration)
	pos(&c.ReplayTimeout, d.ReplayTimeout)
	if c.ReplayEvents <= 0 {
		c.ReplayEvents = d.ReplayEvents
	}
	if c.ReplayLiveRate <= 0 {
		c.ReplayLiveRate = d.ReplayLiveRate
	}
	if len(c.Phases) == 0 {
		c.Phases = d.Phases
	}
	if c.TransformRounds <= 0 {
		c.TransformRounds = transformRoundsDefault
	}
	if c.DestinationRounds <= 0 {
		c.DestinationRounds = destinationRoundsDefault
	}
	if c.DestinationRate == 0 {
		c.DestinationRate = destinationRateDefault
	}
	if c.MaxBacklog <= 0 {
		c.MaxBacklog = d.MaxBacklog
	}
	if len(c.Connections) == 0 {
		c.Connections = d.Connections
	}
	if len(c.Rates) == 0 {
		c.Rates = d.Rates
	}
	if c.OpenLoopConnections <= 0 {
		c.OpenLoopConnections = d.OpenLoopConnections
	}
	if c.PayloadBytes <= 0 {
		c.PayloadBytes = d.PayloadBytes
	}
	if c.BatchSize <= 0 {
		c.BatchSize = d.BatchSize
	}
	if len(c.IngestBatches) == 0 {
		c.IngestBatches = []int{1, c.BatchSize}
	}
	for _, b := range c.IngestBatches {
		if b != 1 && b != c.BatchSize {
			return fmt.Errorf("check config: ingest batch sizes are 1 or %d, got %d", c.BatchSize, b)
		}
	}
	if c.SaturationSteps <= 0 {
		c.SaturationSteps = d.SaturationSteps
	}
	if c.FanOut <= 0 {
		c.FanOut = d.FanOut
	}
	if len(c.MatchSizes) == 0 {
		c.MatchSizes = d.MatchSizes
	}
	if c.SoakRate <= 0 {
		c.SoakRate = d.SoakRate
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.NowFunc == nil {
		c.NowFunc = time.Now
	}
	for _, p := range c.Phases {
		if !slices.Contains(AllPhases(), p) && p != PhaseReplay && p != PhaseTransform && p != PhaseDestination {
			return fmt.Errorf("check config: unknown phase %q (phases: %v, %s, %s, %s)", p, AllPhases(), PhaseReplay, PhaseTransform, PhaseDestination)
		}
		if p == PhaseDestination {
			if err := ValidDestination(c.Destination); err != nil {
				return fmt.Errorf("check config: %w", err)
			}
		}
	}
	for _, n := range c.Connections {
		if n <= 0 {
			return fmt.Errorf("check config: connections must be positive, got %d", n)
		}
	}
	for _, r := range c.Rates {
		if r <= 0 {
			return fmt.Errorf("check config: rates must be positive, got %g", r)
		}
	}
	for i, n := range c.MatchSizes {
		if n <= 0 || (i > 0 && n <= c.MatchSizes[i-1]) {
			return fmt.Errorf("check config: match sizes must be positive and increasing, got %v", c.MatchSizes)
		}
	}
	return nil
}

// runner is one run in progress: its configuration, the report it fills,
// the shared receiver and gateway client, and the time budget.
type runner struct {
	cfg      Config
	rep      *Report
	recv     *receiver
	gw       *gatewayClient
	factory  *eventFactory
	runID    string
	deadline time.Time
	phase    int
}

// left is the time left of the budget.
func (r *runner) left() time.Duration { return r.deadline.Sub(r.cfg.NowFunc()) }

// fits reports whether a phase needing need still fits in the budget, and
// notes its skipping when it does not.
func (r *runner) fits(name string, need time.Duration) bool {
	if left := r.left(); left < need {
		r.rep.Notes = append(r.rep.Notes, fmt.Sprintf("%s skipped: %.0fs of the %.0fs time budget left, it needs about %.0fs",
			name, max(left, 0).Seconds(), r.cfg.Budget.Seconds(), need.Seconds()))
		r.cfg.Logger.Warn("phase skipped: time budget", "phase", name)
		return false
	}
	return true
}

// drainLimit is how long a phase may wait for its deliveries: the drain
// timeout, cut to the budget (but never below 5 s, so the check that every
// event arrived stays meaningful).
func (r *runner) drainLimit() time.Duration {
	return max(min(r.cfg.DrainTimeout, r.left()), 5*time.Second)
}

// nextFactory is the event factory of the next phase (its own id prefix).
func (r *runner) nextFactory() *eventFactory {
	r.phase++
	return r.factory.withPrefix(fmt.Sprintf("p%d-", r.phase))
}

func (r *runner) has(phase string) bool { return slices.Contains(r.cfg.Phases, phase) }

// Run performs the configured phases in order and returns the report. It
// stops by itself: load phases last Duration, drains at most DrainTimeout,
// and phases that no longer fit in Budget are skipped (see Report.Notes).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	now := cfg.NowFunc
	runID := strconv.FormatInt(now().UnixNano(), 36)
	rep := &Report{
		StartedAt: now().UTC(), Target: cfg.BaseURL, Mode: cfg.Mode, PayloadBytes: cfg.PayloadBytes, BatchSize: cfg.BatchSize,
		PhaseSeconds: cfg.Duration.Seconds(), BudgetSeconds: cfg.Budget.Seconds(), Machine: machine(),
	}
	r := &runner{
		cfg: cfg, rep: rep, runID: runID, factory: newEventFactory(runID, cfg.PayloadBytes),
		deadline: now().Add(cfg.Budget),
	}
	// Every wait of the run ends with the budget, the soak and a grace
	// period for the last drain and the clean-up.
	ctx, cancel := context.WithTimeout(ctx, cfg.Budget+cfg.Soak+cfg.DrainTimeout+time.Minute)
	defer cancel()

	if err := r.ceiling(ctx); err != nil {
		return nil, err
	}
	if cfg.BeforePhasesFunc != nil {
		if err := cfg.BeforePhasesFunc(); err != nil {
			return nil, err
		}
	}
	recv, err := startReceiver(ctx, now)
	if err != nil {
		return nil, err
	}
	defer recv.close(ctx)
	r.recv = recv
	r.gw = &gatewayClient{base: cfg.BaseURL, apiKey: cfg.APIKey, http: &http.Client{Timeout: 30 * time.Second}}
	subID, err := r.gw.setup(ctx, runID, recv.url+"/hook")
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.gw.deleteSubscription(context.WithoutCancel(ctx), subID) }()

	steps := []struct {
		name string
		run  func(context.Context) error
	}{
		{PhaseIngest, r.ingest},
		{PhaseLatency, r.latency},
		{PhaseSaturation, r.saturation},
		{PhaseFanOut, r.fanOut},
		{PhaseMatching, r.matching},
		{PhaseReplay, r.replay},
		{PhaseTransform, r.transform},
		{PhaseDestination, r.destination},
	}
	for _, s := range steps {
		if r.has(s.name) {
			if err := s.run(ctx); err != nil {
				return nil, err
			}
		}
	}
	if cfg.Soak > 0 {
		if err := r.soak(ctx); err != nil {
			return nil, err
		}
	}
	rep.PeakRSSBytes = peakRSS()
	rep.FinishedAt = now().UTC()
	return rep, nil
}

// ceiling measures a no-op server with the same payloads and concurrency.
func (r *runner) ceiling(ctx context.Context) error {
	noop, err := startNoop(ctx)
	if err != nil {
		return err
	}
	defer noop.close(ctx)
	for _, batch := range []int{1, r.cfg.BatchSize} {
		for _, conns := range r.cfg.Connections {
			r.cfg.Logger.Info("ceiling", "batch", batch, "connections", conns)
			body := r.factory.sampleBody(batch)
			res, err := closedLoop(ctx, closedLoopSpec{
				url: noop.url, conns: conns, duration: r.cfg.Duration, now: r.cfg.NowFunc,
				body: func(int64) ([]byte, string) { return body, contentType(batch) },
			})
			if err != nil {
				return fmt.Errorf("measure ceiling: %w", err)
			}
			r.rep.Ceiling = append(r.rep.Ceiling, CeilingResult{
				Batch: batch, Connections: conns,
				Requests: res.ok, Errors: res.failed, RequestsPerSec: res.rate(),
			})
		}
	}
	return nil
}

// ingest measures closed-loop ingest (single events, then batches) with
// the deliveries it causes.
func (r *runner) ingest(ctx context.Context) error {
	for _, batch := range r.cfg.IngestBatches {
		for _, conns := range r.cfg.Connections {
			if !r.fits(fmt.Sprintf("ingest batch %d conns %d", batch, conns), r.cfg.Duration+5*time.Second) {
				return nil
			}
			r.cfg.Logger.Info("ingest", "batch", batch, "connections", conns)
			res, err := ingestPhase(ctx, r, r.nextFactory(), batch, conns)
			if err != nil {
				return err
			}
			if c := r.rep.ceiling(batch, conns); c > 0 {
				res.RatioToCeiling = res.RequestsPerSec / c
			}
			if c := r.rep.ceiling(1, conns); c > 0 {
				res.DeliveryRatioToCeiling = res.DeliveredPerSec / c
			}
			r.rep.Ingest = append(r.rep.Ingest, res)
		}
	}
	return nil
}

// latency measures end-to-end latency at each fixed offered rate.
func (r *runner) latency(ctx context.Context) error {
	for _, rate := range r.cfg.Rates {
		if !r.fits(fmt.Sprintf("latency at %.0f/s", rate), r.cfg.Duration+5*time.Second) {
			return nil
		}
		r.cfg.Logger.Info("latency", "rate", rate)
		res, err := latencyPhase(ctx, r, r.nextFactory(), rate, r.cfg.Duration)
		if err != nil {
			return err
		}
		res.Sustained = r.sustained(res)
		r.rep.Latency = append(r.rep.Latency, res)
	}
	return nil
}
