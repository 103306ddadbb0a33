package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/hooklane/hooklane/cmd/hooklane/bench"
)

// benchCmd runs `hooklane bench`: against --url, or against a gateway it
// starts in-process on a free loopback port: on the embedded default
// (SQLite in a temp dir, in-process queue) or, with --mode mongo-sqs, on
// MongoDB and an SQS FIFO queue.
func benchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	short := fs.Bool("short", false, "a smoke run of a few seconds in all (CI)")
	url := fs.String("url", "", "gateway to measure (empty: start one in-process on the embedded default)")
	apiKey := fs.String("api-key", "", "admin API key for --url")
	duration := fs.Duration("duration", 0, "load time of each phase (default 4s, 1s with --short)")
	drain := fs.Duration("drain-timeout", 0, "longest wait for deliveries after a phase (default 30s)")
	mode := fs.String("mode", "embedded", "in-process gateway: embedded (SQLite + in-process queue) or mongo-sqs")
	mongoURI := fs.String("mongo-uri", os.Getenv("HOOKLANE_MONGO_URI"), "MongoDB of --mode mongo-sqs (env HOOKLANE_MONGO_URI)")
	mongoDB := fs.String("mongo-database", "", "MongoDB database of --mode mongo-sqs (default: a fresh hooklane_bench_<time>)")
	sqsEndpoint := fs.String("sqs-endpoint", os.Getenv("HOOKLANE_SQS_ENDPOINT"), "SQS endpoint of --mode mongo-sqs (env HOOKLANE_SQS_ENDPOINT)")
	sqsQueueURL := fs.String("sqs-queue-url", os.Getenv("HOOKLANE_SQS_QUEUE_URL"), "SQS FIFO queue of --mode mongo-sqs (env HOOKLANE_SQS_QUEUE_URL)")
	tracing := fs.Bool("tracing", false, "turn the in-process gateway's OpenTelemetry tracing on, every trace sampled, exporting to a loopback OTLP/HTTP sink that discards the spans")
	commitWindow := fs.String("sqlite-commit-window", "500us", "embedded store commit window of the in-process gateway (the gateway's default 500us; 0 commits at once)")
	sqliteSync := fs.String("sqlite-synchronous", "full", "embedded store durability of the in-process gateway: full (the gateway's default) or normal (the gateway's environment is not read: set it here)")
	sqsRegion := fs.String("sqs-region", cmpOr(os.Getenv("HOOKLANE_SQS_REGION"), "us-east-1"), "AWS region of the queue")
	budget := fs.Duration("budget", 0, "time budget of the whole run, soak excluded; phases that no longer fit are skipped (default 170s)")
	phases := fs.String("phases", "", "phases to run, comma-separated: "+strings.Join(bench.AllPhases(), ",")+" (default all; the ceiling always runs), or "+bench.PhaseReplay+" (not in a default run)")
	replayEvents := fs.Int("replay-events", 0, "stored events the replay phase replays (default 100000, 2000 with --short)")
	replayLive := fs.Float64("replay-live-rate", 0, "live events/s offered while the replay runs (default 500)")
	replayRate := fs.Int("replay-rate", 0, "HOOKLANE_REPLAY_RATE of the in-process gateway (default: the gateway's, 2000)")
	rates := fs.String("rates", "", "open-loop offered rates in events/s, comma-separated (default 500,1000,2000)")
	satP99 := fs.Duration("saturation-p99", 0, "p99 end-to-end latency a sustained rate must stay under (default 100ms)")
	fanOut := fs.Int("fanout", 0, "subscriptions of the fan-out phase (default 10)")
	matchSizes := fs.String("match-sizes", "", "subscription counts of the matching phase, increasing (default 10,100,1000,10000)")
	soak := fs.Duration("soak", 0, "add a soak of this length (e.g. 5m) that samples RSS; not part of the budget")
	soakRate := fs.Float64("soak-rate", 0, "offered events/s of the soak (default 1000)")
	conns := fs.String("connections", "", "closed-loop connection counts, comma-separated (default 8,32,128)")
	payload := fs.Int("payload-bytes", 0, "size of each event's data (default 256)")
	jsonPath := fs.String("json", "", "also write the report as JSON to this file")
	comparePath := fs.String("compare", "", "a report saved earlier with --json: print each figure of this run against it (after/before ratios)")
	verbose := fs.Bool("v", false, "log progress and the in-process gateway's warnings to stderr")
	batches := fs.String("batches", "", "batch sizes of the ingest phase, comma-separated: 1 (single events) and/or 100 (default both)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the phases against the gateway (in-process, with the load generator and receiver; the ceiling is not in it) to this file")
	memProfile := fs.String("memprofile", "", "write an allocation profile (alloc_space) at the end of the run to this file")
	transformFile := fs.String("transform", "", "measure the cost of this transformation (a JavaScript file defining function handler(webhook), API.md §16) per delivered event, against the same load without it, in interleaved rounds; alone, runs only the "+bench.PhaseTransform+" phase")
	transformRounds := fs.Int("transform-rounds", 0, "interleaved rounds of each load of the transform phase (default 3; the figures are medians)")
	destinationType := fs.String("destination", "", "measure delivery to this destination type ("+strings.Join(bench.DestinationTypes(), ", ")+"): delivered events/s, CPU per event and ingest→delivery latency, with the broker in process (kafka: kfake, nats: nats-server with JetStream, pubsub: pstest) or the local stack's (sqs, rabbitmq), webhook the bench's HTTP receiver; alone, runs only the "+bench.PhaseDestination+" phase")
	destinationRounds := fs.Int("destination-rounds", 0, "closed-loop rounds of the destination phase (default 3; the figures are medians)")
	destinationRate := fs.Float64("destination-rate", 0, "open-loop events/s of the destination phase's latency load (default 200; negative: none)")
	destinationSQS := fs.String("destination-sqs-endpoint", os.Getenv("HOOKLANE_TEST_SQS_ENDPOINT"), "SQS endpoint of --destination sqs (env HOOKLANE_TEST_SQS_ENDPOINT, the local stack's)")
	destinationAMQP := fs.String("destination-amqp-url", os.Getenv("HOOKLANE_TEST_AMQP_URL"), "RabbitMQ of --destination rabbitmq (env HOOKLANE_TEST_AMQP_URL, the local stack's)")
	blockProfile := fs.String("blockprofile", "", "write a profile of where goroutines waited (blocking events of 100µs and more) to this file")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("parse flags: %w", err)
	}
	// Read the report to compare with first: a wrong path fails at once,
	// not after the run.
	var before *bench.Report
	if *comparePath != "" {
		raw, err := os.ReadFile(*comparePath)
		if err != nil {
			return fmt.Errorf("read report to compare with: %w", err)
		}
		before = &bench.Report{}
		if err := json.Unmarshal(raw, before); err != nil {
			return fmt.Errorf("decode report to compare with %s: %w", *comparePath, err)
		}
	}
	cfg := bench.Defaults()
	if *short {
		cfg = bench.Short()
	}
	// Flags left at zero keep the preset's value.
	override(&cfg.Duration, *duration)
	override(&cfg.DrainTimeout, *drain)
	override(&cfg.PayloadBytes, *payload)
	override(&cfg.Budget, *budget)
	override(&cfg.SaturationP99, *satP99)
	override(&cfg.FanOut, *fanOut)
	override(&cfg.Soak, *soak)
	override(&cfg.SoakRate, *soakRate)
	override(&cfg.ReplayEvents, *replayEvents)
	override(&cfg.ReplayLiveRate, *replayLive)
	if *phases != "" {
		cfg.Phases = strings.Split(strings.ReplaceAll(*phases, " ", ""), ",")
	}
	if *transformFile != "" {
		code, err := os.ReadFile(*transformFile)
		if err != nil {
			return fmt.Errorf("read --transform: %w", err)
		}
		cfg.TransformCode, cfg.TransformRounds = string(code), *transformRounds
		if *phases == "" {
			cfg.Phases = []string{bench.PhaseTransform}
		}
	}
	if *destinationType != "" {
		if err := bench.ValidDestination(*destinationType); err != nil {
			return fmt.Errorf("--destination: %w", err)
		}
		cfg.Destination, cfg.DestinationRounds, cfg.DestinationRate = *destinationType, *destinationRounds, *destinationRate
		cfg.SQSEndpoint, cfg.AMQPURL = *destinationSQS, *destinationAMQP
		if *phases == "" {
			cfg.Phases = []string{bench.PhaseDestination}
		}
	}
	var err error
	if *matchSizes != "" {
		if cfg.MatchSizes, err = parseList(*matchSizes, strconv.Atoi); err != nil {
			return fmt.Errorf("parse --match-sizes: %w", err)
		}
	}
	if *rates != "" {
		if cfg.Rates, err = parseList(*rates, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }); err != nil {
			return fmt.Errorf("parse --rates: %w", err)
		}
	}
	if *conns != "" {
		if cfg.Connections, err = parseList(*conns, strconv.Atoi); err != nil {
			return fmt.Errorf("parse --connections: %w", err)
		}
	}
	if *batches != "" {
		if cfg.IngestBatches, err = parseList(*batches, strconv.Atoi); err != nil {
			return fmt.Errorf("parse --batches: %w", err)
		}
	}
	logw := io.Discard
	if *verbose {
		logw = stderr
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	cfg.BaseURL, cfg.APIKey = *url, *apiKey
	if cfg.BaseURL == "" {
		var gw []string
		var rt *roundTrips
		switch *mode {
		case "embedded":
			gw = []string{"--sqlite-synchronous", *sqliteSync, "--sqlite-commit-window", *commitWindow}
		case "mongo-sqs":
			if *mongoURI == "" || *sqsEndpoint == "" || *sqsQueueURL == "" {
				return errors.New("bench --mode mongo-sqs needs --mongo-uri, --sqs-endpoint and --sqs-queue-url")
			}
			db := cmpOr(*mongoDB, "hooklane_bench_"+strconv.FormatInt(time.Now().Unix(), 36))
			gw = []string{
				"--mongo-uri", *mongoURI, "--mongo-database", db,
				"--sqs-endpoint", *sqsEndpoint, "--sqs-queue-url", *sqsQueueURL, "--sqs-region", *sqsRegion,
			}
			// Count the MongoDB commands and SQS requests per delivered event.
			rt = &roundTrips{}
			cfg.RoundTrips = rt.snapshot
		default:
			return fmt.Errorf("bench: unknown --mode %q (embedded or mongo-sqs)", *mode)
		}
		if *replayRate > 0 {
			gw = append(gw, "--replay-rate", strconv.Itoa(*replayRate))
		}
		if *transformFile != "" {
			// The time limit is wall-clock: on a loaded machine a run
			// descheduled for 100 ms would fail its delivery and leave
			// the phase incomplete. The phase measures CPU, not the limit.
			gw = append(gw, "--transform-timeout", "5s")
		}
		var tracingCfg TracingConfig
		if *tracing {
			sink, err := startOTLPSink(ctx)
			if err != nil {
				return err
			}
			defer func() {
				_ = sink.stop(ctx)
				_, _ = fmt.Fprintf(stdout, "tracing: %d OTLP exports, %d bytes of spans received by the sink\n", sink.requests.Load(), sink.bytes.Load())
			}()
			tracingCfg = TracingConfig{Enabled: true, Endpoint: sink.url}
		}
		base, stop, err := startBenchGateway(ctx, logw, gw, rt, tracingCfg)
		if err != nil {
			return err
		}
		defer func() { _ = stop() }()
		cfg.BaseURL, cfg.Mode = base, *mode
		// The in-process gateway's data goes with it (a temp dir; a fresh
		// MongoDB database): the matching phase need not delete its
		// thousands of subscriptions.
		cfg.KeepSubscriptions = true
	} else {
		cfg.Mode = "url"
	}
	if *cpuProfile != "" {
		stopProfile := func() {}
		defer func() { stopProfile() }()
		cfg.BeforePhasesFunc = func() error {
			stop, err := startCPUProfile(*cpuProfile)
			if err != nil {
				return err
			}
			stopProfile = stop
			return nil
		}
	}
	if *blockProfile != "" {
		runtime.SetBlockProfileRate(int((100 * time.Microsecond).Nanoseconds()))
		defer runtime.SetBlockProfileRate(0)
	}
	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		return fmt.Errorf("run benchmark: %w", err)
	}
	if *memProfile != "" {
		if err := writeProfile("allocs", *memProfile); err != nil {
			return err
		}
	}
	if *blockProfile != "" {
		if err := writeProfile("block", *blockProfile); err != nil {
			return err
		}
	}
	if err := rep.WriteTable(stdout); err != nil {
		return err
	}
	if before != nil {
		fmt.Fprintf(stdout, "\ncompared with %s (run %s):\n", *comparePath, before.StartedAt.Format(time.RFC3339))
		if err := bench.WriteComparison(stdout, bench.Compare(before, rep)); err != nil {
			return err
		}
	}
	if *jsonPath != "" {
		raw, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return fmt.Errorf("encode report: %w", err)
		}
		if err := os.WriteFile(*jsonPath, append(raw, '\n'), 0o644); err != nil { //nolint:gosec // a report, world-readable by design
			return fmt.Errorf("write report: %w", err)
		}
	}
	if p := rep.Problems(); len(p) > 0 {
		return fmt.Errorf("benchmark incomplete:\n  %s", strings.Join(p, "\n  "))
	}
	return nil
}

// startBenchGateway runs the gateway in-process on 127.0.0.1:0 with a temp
// data dir and the extra flags, its round trips counted by rt when not nil
// and tracing configured by tc (the environment is not read); stop ends it
// and removes the data dir.
func startBenchGateway(ctx context.Context, logw io.Writer, extra []string, rt *roundTrips, tc TracingConfig) (string, func() error, error) {
	dir, err := os.MkdirTemp("", "hooklane-bench-")
	if err != nil {
		return "", nil, fmt.Errorf("create data dir: %w", err)
	}
	args := append([]string{"--listen", "127.0.0.1:0", "--data-dir", dir, "--allow-private-targets", "--log-level", "warn"}, extra...)
	cfg, err := loadConfig(args, func(string) string { return "" })
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, fmt.Errorf("configure gateway: %w", err)
	}
	cfg.roundTrips = rt
	cfg.Tracing = tc
	gctx, cancel := context.WithCancel(ctx)
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(gctx, cfg, logw, func(a string) { addr <- a }) }()
	stop := func() error {
		cancel()
		err := <-done
		return errors.Join(err, os.RemoveAll(dir))
	}
	select {
	case a := <-addr:
		return "http://" + a, stop, nil
	case err := <-done:
		cancel()
		_ = os.RemoveAll(dir)
		return "", nil, fmt.Errorf("start gateway: %w", err)
	}
}

// startCPUProfile profiles the process until the returned func is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path) //nolint:gosec // a path the user gave
	if err != nil {
		return nil, fmt.Errorf("create cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

// writeProfile writes the named runtime profile: "allocs" (every
// allocation since the start; `go tool pprof -sample_index=alloc_space`)
// or "block" (where goroutines waited).
func writeProfile(name, path string) error {
	f, err := os.Create(path) //nolint:gosec // a path the user gave
	if err != nil {
		return fmt.Errorf("create %s profile: %w", name, err)
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s profile: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s profile: %w", name, err)
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func parseList[T any](s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for part := range strings.SplitSeq(s, ",") {
		v, err := parse(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("parse %q: %w", part, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// override sets *dst to v when v is positive (a flag that was given).
func override[T int | float64 | time.Duration](dst *T, v T) {
	if v > 0 {
		*dst = v
	}
}
