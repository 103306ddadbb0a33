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

// bench --transform runs only the transform phase: interleaved rounds of
// the same load without and with the transformation, every event delivered,
// the medians reported.
func TestBenchTransformMeasuresTheTransformation(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bench.json")
	var stdout, stderr bytes.Buffer
	code := run([]string{
		"bench", "--short", "--duration", "300ms", "--drain-timeout", "2m", "--transform", "bench/testdata/rename.js",
		"--transform-rounds", "2", "--json", path,
	}, func(string) string { return "" }, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr: %s\nstdout: %s", stderr.String(), stdout.String())
	require.Contains(t, stdout.String(), "transform (median)")

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var rep bench.Report
	require.NoError(t, json.Unmarshal(raw, &rep))
	require.Empty(t, rep.Problems())
	require.Empty(t, rep.Ingest, "only the transform phase runs")
	x := rep.Transform
	require.NotNil(t, x)
	require.Len(t, x.Rounds, 4)
	for i, rd := range x.Rounds {
		require.Equal(t, i == 1 || i == 2, rd.Transformed, "rounds alternate by pairs: one plain, two transformed, one plain")
		require.Positive(t, rd.Events)
		require.Equal(t, rd.Events, rd.Delivered)
		require.Positive(t, rd.Cost.CPUSeconds)
	}
	require.Positive(t, x.PlainCPUMicros)
	require.Positive(t, x.TransformedCPUMicros)
	require.InDelta(t, x.TransformedCPUMicros-x.PlainCPUMicros, x.ExtraCPUMicros, 1e-9)
	require.NotNil(t, x.Trend, "four rounds give the fit with the growth taken out")
	require.Contains(t, stdout.String(), "transform (growth taken out)")
}

// The transformation really runs in the transformed rounds: one that
// throws delivers nothing there, and the run reports it incomplete.
func TestBenchTransformRunsTheGivenCode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	js := filepath.Join(dir, "throw.js")
	require.NoError(t, os.WriteFile(js, []byte(`function handler(w) { throw new Error("no"); }`), 0o600))
	var stdout, stderr bytes.Buffer
	code := run([]string{
		"bench", "--short", "--duration", "200ms", "--drain-timeout", "5s", "--transform", js, "--transform-rounds", "1",
	}, func(string) string { return "" }, &stdout, &stderr)
	require.NotEqual(t, 0, code)
	require.Contains(t, stderr.String(), "transform round 1 (transformed true)")
	require.NotContains(t, stderr.String(), "transformed false", "the plain round delivers everything")
}
