package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/cmd/hooklane/bench"
)

// bench --destination nats runs only the destination phase: closed-loop
// rounds and an open-loop load to a subscription whose destination is an
// in-process nats-server with JetStream, every event read back from the
// subject, the medians and the latency reported.
func TestBenchDestinationDeliversEverything(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bench.json")
	var stdout, stderr bytes.Buffer
	code := run([]string{
		"bench", "--short", "--duration", "300ms", "--drain-timeout", "2m", "--destination", "nats",
		"--destination-rounds", "2", "--destination-rate", "50", "--json", path,
	}, func(string) string { return "" }, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr: %s\nstdout: %s", stderr.String(), stdout.String())
	require.Contains(t, stdout.String(), "destination nats (median)")

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var rep bench.Report
	require.NoError(t, json.Unmarshal(raw, &rep))
	require.Empty(t, rep.Problems())
	require.Empty(t, rep.Ingest, "only the destination phase runs")
	x := rep.Destination
	require.NotNil(t, x)
	require.Equal(t, "nats", x.Type)
	require.True(t, x.InProcessBroker)
	require.Len(t, x.Rounds, 2)
	for _, rd := range x.Rounds {
		require.Positive(t, rd.Events)
		require.Equal(t, rd.Events, rd.Delivered, "every accepted event read back from the broker")
		require.Zero(t, rd.Duplicates)
		require.Positive(t, rd.Cost.CPUSeconds)
	}
	require.Positive(t, x.DeliveredPerSec)
	require.Positive(t, x.CPUMillisPerEvent)
	require.NotNil(t, x.Latency)
	require.Equal(t, x.Latency.Accepted, x.Latency.Delivered)
	require.Positive(t, x.Latency.P99Ms)
}

// An unknown --destination, and sqs without an endpoint, fail with what
// to give.
func TestBenchDestinationRefusesWhatItCannotReach(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := run([]string{"bench", "--short", "--destination", "carrier-pigeon"}, func(string) string { return "" }, &stdout, &stderr)
	require.NotEqual(t, 0, code)
	require.Contains(t, stderr.String(), `unknown destination "carrier-pigeon"`)

	stderr.Reset()
	code = run([]string{"bench", "--short", "--duration", "200ms", "--destination", "sqs", "--destination-sqs-endpoint", ""},
		func(string) string { return "" }, &stdout, &stderr)
	require.NotEqual(t, 0, code)
	require.Contains(t, stderr.String(), "needs an SQS endpoint")
}
