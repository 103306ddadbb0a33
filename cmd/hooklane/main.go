// Command hooklane is the Hooklane webhook gateway: `hooklane serve` runs
// it, `hooklane version` prints its version.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "serve":
		cfg, err := loadConfig(args[1:], getenv)
		if errors.Is(err, flag.ErrHelp) {
			serveHelp(stdout)
			return 0
		}
		if err != nil {
			fmt.Fprintf(stderr, "hooklane: invalid configuration:\n%v\n", err)
			return 2
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := serve(ctx, cfg, stderr, nil); err != nil {
			fmt.Fprintf(stderr, "hooklane: %v\n", err)
			return 1
		}
		return 0
	case "receive":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := receive(ctx, args[1:], stdout, stderr); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			fmt.Fprintf(stderr, "hooklane: %v\n", err)
			return 1
		}
		return 0
	case "brokers":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := brokers(ctx, args[1:], stdout, stderr); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			fmt.Fprintf(stderr, "hooklane: %v\n", err)
			return 1
		}
		return 0
	case "bench":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := benchCmd(ctx, args[1:], stdout, stderr); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			fmt.Fprintf(stderr, "hooklane: %v\n", err)
			return 1
		}
		return 0
	case "config-doc":
		configDoc(stdout)
		return 0
	case "version":
		fmt.Fprintf(stdout, "hooklane %s\n", version)
		return 0
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "hooklane: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: hooklane <command> [flags]

commands:
  serve        run the gateway (see hooklane serve -h for every setting)
  receive      run a development webhook receiver that prints deliveries
  brokers      run development Kafka, NATS and Pub/Sub brokers that print what they get
  bench        measure throughput, latency and cost on this machine (hooklane bench -h)
  version      print the version
  config-doc   print the configuration reference (the README's table)
`)
}
