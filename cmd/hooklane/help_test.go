package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHelpExitsZero: help asked for is not an error — every command exits
// 0 on -h and --help, as `hooklane --help` does, after printing its flags;
// a bad flag still fails.
func TestHelpExitsZero(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cmd, flag string
	}{{"serve", "--listen"}, {"receive", "-listen"}, {"bench", "-short"}}
	for _, tt := range tests {
		for _, h := range []string{"-h", "--help"} {
			t.Run(tt.cmd+" "+h, func(t *testing.T) {
				t.Parallel()
				var stdout, stderr bytes.Buffer
				code := run([]string{tt.cmd, h}, func(string) string { return "" }, &stdout, &stderr)
				require.Equal(t, 0, code, "stderr: %s", stderr.String())
				require.Contains(t, stdout.String()+stderr.String(), tt.flag, "the help lists the flags")
			})
		}
		t.Run(tt.cmd+" bad flag", func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			require.NotEqual(t, 0, run([]string{tt.cmd, "--no-such-flag"}, func(string) string { return "" }, &stdout, &stderr))
		})
	}
	var stdout bytes.Buffer
	require.Equal(t, 0, run([]string{"--help"}, func(string) string { return "" }, &stdout, &stdout))
}
