// Package bench is the harness behind `hooklane bench`: it measures the
// machine's loopback HTTP ceiling, then a gateway's ingest throughput,
// delivery throughput, open-loop end-to-end latency and cost per event,
// against a local webhook receiver on 127.0.0.1.
package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// Config sets what one benchmark run measures. Zero fields take the
// defaults of Defaults.
type Config struct {
	// BaseURL is the gateway under test, e.g. http://127.0.0.1:8080.
	BaseURL string
	// APIKey, when set, is sent as a Bearer token (admin role needed for setup).
	APIKey string
	// Duration is how long each measured phase offers load.
	Duration time.Duration
	// DrainTimeout bounds the wait for deliveries after a phase's load stops.
	DrainTimeout time.Duration
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
	// Logger receives progress lines.
	Logger *slog.Logger
	// NowFunc is the clock; time.Now when nil.
	NowFunc func() time.Time
}

// Defaults returns the configuration of a full run (under 3 minutes).
func Defaults() Config {
	return Config{
		Duration:            4 * time.Second,
		DrainTimeout:        30 * time.Second,
		Connections:         []int{8, 32, 128},
		Rates:               []float64{500, 1000},
		OpenLoopConnections: 64,
		PayloadBytes:        256,
		BatchSize:           100,
	}
}

// Short returns the configuration of a smoke run of a few seconds in all.
func Short() Config {
	c := Defaults()
	c.Duration = 1 * time.Second
	c.DrainTimeout = 20 * time.Second
	c.Connections = []int{8}
	c.Rates = []float64{200}
	return c
}

func (c *Config) fill() error {
	d := Defaults()
	if c.BaseURL == "" {
		return errors.New("check config: no gateway URL")
	}
	if c.Duration <= 0 {
		c.Duration = d.Duration
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = d.DrainTimeout
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
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.NowFunc == nil {
		c.NowFunc = time.Now
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
	return nil
}

// Run performs every phase in order and returns the report. It stops by
// itself: each phase offers load for Duration and waits at most
// DrainTimeout for deliveries.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	now := cfg.NowFunc
	runID := strconv.FormatInt(now().UnixNano(), 36)
	rep := &Report{
		StartedAt: now().UTC(), Target: cfg.BaseURL, PayloadBytes: cfg.PayloadBytes, BatchSize: cfg.BatchSize,
		PhaseSeconds: cfg.Duration.Seconds(), Machine: machine(),
	}
	single := newEventFactory(runID, cfg.PayloadBytes)

	// a. The ceiling: a no-op server with the same payloads and concurrency.
	noop, err := startNoop(ctx)
	if err != nil {
		return nil, err
	}
	defer noop.close()
	for _, batch := range []int{1, cfg.BatchSize} {
		for _, conns := range cfg.Connections {
			cfg.Logger.Info("ceiling", "batch", batch, "connections", conns)
			body := single.sampleBody(batch)
			res, err := closedLoop(ctx, closedLoopSpec{
				url: noop.url, conns: conns, duration: cfg.Duration, now: now,
				body: func(int64) ([]byte, string) { return body, contentType(batch) },
			})
			if err != nil {
				return nil, fmt.Errorf("measure ceiling: %w", err)
			}
			rep.Ceiling = append(rep.Ceiling, CeilingResult{Batch: batch, Connections: conns,
				Requests: res.ok, Errors: res.failed, RequestsPerSec: res.rate()})
		}
	}

	recv, err := startReceiver(ctx, now)
	if err != nil {
		return nil, err
	}
	defer recv.close()
	gw := &gatewayClient{base: cfg.BaseURL, apiKey: cfg.APIKey, http: &http.Client{Timeout: 30 * time.Second}}
	subID, err := gw.setup(ctx, runID, recv.url+"/hook")
	if err != nil {
		return nil, err
	}
	defer func() { _ = gw.deleteSubscription(context.WithoutCancel(ctx), subID) }()

	// b+c. Ingest (closed loop) with the deliveries it causes.
	phase := 0
	for _, batch := range []int{1, cfg.BatchSize} {
		for _, conns := range cfg.Connections {
			phase++
			cfg.Logger.Info("ingest", "batch", batch, "connections", conns)
			r, err := ingestPhase(ctx, cfg, gw, recv, single.withPrefix(fmt.Sprintf("p%d-", phase)), batch, conns)
			if err != nil {
				return nil, err
			}
			if c := rep.ceiling(batch, conns); c > 0 {
				r.RatioToCeiling = r.RequestsPerSec / c
			}
			if c := rep.ceiling(1, conns); c > 0 {
				r.DeliveryRatioToCeiling = r.DeliveredPerSec / c
			}
			rep.Ingest = append(rep.Ingest, r)
		}
	}

	// d. End-to-end latency at fixed offered rates (open loop).
	for _, rate := range cfg.Rates {
		phase++
		cfg.Logger.Info("latency", "rate", rate)
		r, err := latencyPhase(ctx, cfg, gw, recv, single.withPrefix(fmt.Sprintf("p%d-", phase)), rate)
		if err != nil {
			return nil, err
		}
		rep.Latency = append(rep.Latency, r)
	}
	rep.PeakRSSBytes = peakRSS()
	rep.FinishedAt = now().UTC()
	return rep, nil
}
