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
	"strconv"
	"strings"

	"github.com/hooklane/hooklane/bench"
)

// benchCmd runs `hooklane bench`: against --url, or against a gateway it
// starts in-process on the embedded default (SQLite in a temp dir,
// in-process queue) on a free loopback port.
func benchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	short := fs.Bool("short", false, "a smoke run of a few seconds in all (CI)")
	url := fs.String("url", "", "gateway to measure (empty: start one in-process on the embedded default)")
	apiKey := fs.String("api-key", "", "admin API key for --url")
	duration := fs.Duration("duration", 0, "load time of each phase (default 4s, 1s with --short)")
	drain := fs.Duration("drain-timeout", 0, "longest wait for deliveries after a phase (default 30s)")
	rates := fs.String("rates", "", "open-loop offered rates in events/s, comma-separated (default 500,1000)")
	conns := fs.String("connections", "", "closed-loop connection counts, comma-separated (default 8,32,128)")
	payload := fs.Int("payload-bytes", 0, "size of each event's data (default 256)")
	jsonPath := fs.String("json", "", "also write the report as JSON to this file")
	verbose := fs.Bool("v", false, "log progress and the in-process gateway's warnings to stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg := bench.Defaults()
	if *short {
		cfg = bench.Short()
	}
	if *duration > 0 {
		cfg.Duration = *duration
	}
	if *drain > 0 {
		cfg.DrainTimeout = *drain
	}
	if *payload > 0 {
		cfg.PayloadBytes = *payload
	}
	var err error
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
	logw := io.Discard
	if *verbose {
		logw = stderr
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	cfg.BaseURL, cfg.APIKey = *url, *apiKey
	if cfg.BaseURL == "" {
		base, stop, err := startBenchGateway(ctx, logw)
		if err != nil {
			return err
		}
		defer func() { _ = stop() }()
		cfg.BaseURL = base
	}
	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		return fmt.Errorf("run benchmark: %w", err)
	}
	if err := rep.WriteTable(stdout); err != nil {
		return err
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
// data dir; stop ends it and removes the data.
func startBenchGateway(ctx context.Context, logw io.Writer) (string, func() error, error) {
	dir, err := os.MkdirTemp("", "hooklane-bench-")
	if err != nil {
		return "", nil, fmt.Errorf("create data dir: %w", err)
	}
	args := []string{"--listen", "127.0.0.1:0", "--data-dir", dir, "--allow-private-targets", "--log-level", "warn"}
	cfg, err := loadConfig(args, func(string) string { return "" })
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, fmt.Errorf("configure gateway: %w", err)
	}
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
