package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/hooklane/hooklane/destination/devbroker"
)

// brokersBodyMax is how much of a message body `hooklane brokers` prints.
const brokersBodyMax = 4 << 10

// brokers runs development brokers of the destination types that need no
// installation (Kafka, NATS with JetStream, Pub/Sub), in this process on
// loopback, and prints every message the gateway publishes to them: the
// other end of the README's destination examples, as `receive` is for
// webhooks.
func brokers(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("hooklane brokers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addrs := map[string]*string{
		devbroker.Kafka:  fs.String("kafka", "127.0.0.1:9092", "Kafka (kfake) listen address; empty: no Kafka"),
		devbroker.NATS:   fs.String("nats", "127.0.0.1:4222", "NATS (nats-server with JetStream) listen address; empty: no NATS"),
		devbroker.PubSub: fs.String("pubsub", "127.0.0.1:8085", "Pub/Sub emulator (pstest) listen address; empty: no Pub/Sub"),
	}
	name := fs.String("name", "orders", "the Kafka topic, the NATS subject (a JetStream stream takes it and NAME.>) and the Pub/Sub topic")
	runFor := fs.Duration("for", 0, "stop after this long (0: at Ctrl-C or SIGTERM)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("parse flags: %w", err)
	}
	if *runFor > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *runFor)
		defer cancel()
	}
	var mu sync.Mutex
	show := func(m *devbroker.Message) {
		mu.Lock()
		defer mu.Unlock()
		body := m.Body
		cut := ""
		if len(body) > brokersBodyMax {
			body, cut = body[:brokersBodyMax], fmt.Sprintf(" … (%d bytes)", len(m.Body))
		}
		var h strings.Builder
		for _, k := range slices.Sorted(maps.Keys(m.Headers)) {
			fmt.Fprintf(&h, " %s=%q", k, m.Headers[k])
		}
		key := ""
		if m.Key != "" {
			key = fmt.Sprintf(" key=%q", m.Key)
		}
		fmt.Fprintf(stdout, "%s%s%s\n%s%s\n\n", m.Type, key, h.String(), body, cut)
	}
	var started []*devbroker.Broker
	defer func() {
		for _, b := range started {
			b.Close()
		}
	}()
	for _, typ := range devbroker.Types() {
		addr := *addrs[typ]
		if addr == "" {
			continue
		}
		b, err := devbroker.Start(ctx, &devbroker.Config{Type: typ, Addr: addr, Name: *name, OnMessageFunc: show})
		if err != nil {
			return fmt.Errorf("%s on %s: %w", typ, addr, err)
		}
		started = append(started, b)
		fmt.Fprintf(stdout, "%-6s on %s — a subscription's destination: %s\n", typ, b.Addr, b.Destination)
	}
	if len(started) == 0 {
		return errors.New("no broker to run: give at least one of --kafka, --nats, --pubsub")
	}
	fmt.Fprintf(stdout, "printing every message (Ctrl-C stops)\n\n")
	<-ctx.Done()
	return nil
}
