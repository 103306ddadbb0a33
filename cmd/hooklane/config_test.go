package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLoadConfigDefaults(t *testing.T) {
	t.Parallel()
	c, err := loadConfig(nil, func(string) string { return "" })
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8080", c.Listen)
	require.Equal(t, 0, c.keys.Len())
	require.Equal(t, int64(1<<20), c.MaxEventBytes)
	require.Equal(t, 10, c.CircuitFailures)
	require.Equal(t, 30*time.Second, c.CircuitCooldown)
	require.Equal(t, 120*time.Hour, c.AutoDisableAfter)
	require.Equal(t, 500*time.Microsecond, c.SQLiteCommitWindow)
}

func TestLoadConfigZeroMeansNever(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HOOKLANE_CIRCUIT_FAILURES": "0", "HOOKLANE_AUTO_DISABLE_AFTER": "0"}
	c, err := loadConfig(nil, func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Zero(t, c.CircuitFailures)
	require.Zero(t, c.AutoDisableAfter)
}

// TestLoadConfigCommitWindowOff: 0 turns the embedded store's commit
// window off.
func TestLoadConfigCommitWindowOff(t *testing.T) {
	t.Parallel()
	c, err := loadConfig([]string{"--sqlite-commit-window", "0"}, func(string) string { return "" })
	require.NoError(t, err)
	require.Zero(t, c.SQLiteCommitWindow)
}

func TestLoadConfigFlagWinsOverEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HOOKLANE_MAX_BATCH": "10", "HOOKLANE_LOG_LEVEL": "debug"}
	c, err := loadConfig([]string{"--max-batch", "20"}, func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, 20, c.MaxBatch)
	require.Equal(t, "debug", c.LogLevel)
}

func TestLoadConfigAPIKeys(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "keys")
	require.NoError(t, os.WriteFile(file, []byte("# ops team\nops:admin:s3cret-admin\n\nshop:producer:s3cret,with,commas\n"), 0o600))
	env := map[string]string{
		"HOOKLANE_LISTEN": "0.0.0.0:8080", "HOOKLANE_API_KEYS": "dash:viewer:s3cret-viewer", "HOOKLANE_API_KEYS_FILE": file,
	}
	c, err := loadConfig(nil, func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, []string{"dash (viewer)", "ops (admin)", "shop (producer)"}, c.keys.Names())
}

// TestLoadConfigErrors: every problem is reported at once, each naming its
// variable and flag, and no error shows a key.
func TestLoadConfigErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	badFile := filepath.Join(dir, "bad")
	require.NoError(t, os.WriteFile(badFile, []byte("ops:admin:s3cret-one\nops:viewer:s3cret-two\n"), 0o600))
	tests := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{
			name: "no keys beyond loopback", env: map[string]string{"HOOKLANE_LISTEN": "0.0.0.0:8080"},
			want: []string{"HOOKLANE_LISTEN (--listen): refusing to listen on 0.0.0.0:8080 without API keys"},
		},
		{
			name: "no keys on a public name", env: map[string]string{"HOOKLANE_LISTEN": "example.com:8080"},
			want: []string{"refusing to listen on example.com:8080 without API keys"},
		},
		{
			name: "commit window past its bound", env: map[string]string{"HOOKLANE_SQLITE_COMMIT_WINDOW": "1s"},
			want: []string{"HOOKLANE_SQLITE_COMMIT_WINDOW (--sqlite-commit-window): must be between 0 and 50ms"},
		},
		{
			name: "negative commit window", env: map[string]string{"HOOKLANE_SQLITE_COMMIT_WINDOW": "-1ms"},
			want: []string{"HOOKLANE_SQLITE_COMMIT_WINDOW (--sqlite-commit-window): must be 0 (never) or a positive duration"},
		},
		{
			name: "bad key entry", env: map[string]string{"HOOKLANE_API_KEYS": "ops:root:s3cret-one"},
			want: []string{"HOOKLANE_API_KEYS (--api-keys)", `unknown role "root"`},
		},
		{
			name: "missing keys file", env: map[string]string{"HOOKLANE_API_KEYS_FILE": filepath.Join(dir, "nope")},
			want: []string{"HOOKLANE_API_KEYS_FILE (--api-keys-file): read keys"},
		},
		{
			name: "duplicate name in file", env: map[string]string{"HOOKLANE_API_KEYS_FILE": badFile},
			want: []string{"HOOKLANE_API_KEYS_FILE (--api-keys-file)", `"ops": the name is used twice`},
		},
		{
			name: "several problems", env: map[string]string{"HOOKLANE_LOG_FORMAT": "xml", "HOOKLANE_ROLES": "api,cook", "HOOKLANE_MAX_EVENT_BYTES": "99999999999"},
			want: []string{"HOOKLANE_LOG_FORMAT (--log-format)", `HOOKLANE_ROLES (--roles): unknown role "cook"`, "HOOKLANE_MAX_EVENT_BYTES (--max-event-bytes)"},
		},
		{
			name: "bad trusted proxy", env: map[string]string{"HOOKLANE_TRUSTED_PROXIES": "10.0.0.0/8, proxy.internal"},
			want: []string{`HOOKLANE_TRUSTED_PROXIES (--trusted-proxies): "proxy.internal" is neither a CIDR nor an IP address`},
		},
		{
			name: "bad metrics listen", env: map[string]string{"HOOKLANE_METRICS_LISTEN": "9090"},
			want: []string{`HOOKLANE_METRICS_LISTEN (--metrics-listen): "9090" is not host:port`},
		},
		{
			name: "bad duration", env: map[string]string{"HOOKLANE_LEASE": "soon"},
			want: []string{"HOOKLANE_LEASE (--lease): must be a positive duration"},
		},
		{
			name: "encryption key not base64", env: map[string]string{"HOOKLANE_ENCRYPTION_KEY": "s3cret not base64"},
			want: []string{"HOOKLANE_ENCRYPTION_KEY (--encryption-key): must be base64 of 32 bytes"},
		},
		{
			name: "encryption key too short", env: map[string]string{"HOOKLANE_ENCRYPTION_KEY": "czNjcmV0LTE2LWJ5dGVzIQ=="},
			want: []string{"HOOKLANE_ENCRYPTION_KEY (--encryption-key): must be base64 of 32 bytes, got 16 bytes"},
		},
		{
			name: "negative circuit settings", env: map[string]string{"HOOKLANE_CIRCUIT_FAILURES": "-1", "HOOKLANE_AUTO_DISABLE_AFTER": "-5m", "HOOKLANE_CIRCUIT_COOLDOWN": "0"},
			want: []string{
				"HOOKLANE_CIRCUIT_FAILURES (--circuit-failures): must be 0 (never)", "HOOKLANE_AUTO_DISABLE_AFTER (--auto-disable-after): must be 0 (never)",
				"HOOKLANE_CIRCUIT_COOLDOWN (--circuit-cooldown): must be a positive duration",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := loadConfig(nil, func(k string) string { return tt.env[k] })
			require.Error(t, err)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
			require.NotContains(t, err.Error(), "s3cret")
			require.NotContains(t, err.Error(), "czNjcmV0")
		})
	}
}

func TestLoadConfigEncryptionKey(t *testing.T) {
	t.Parallel()
	key := "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA="
	c, err := loadConfig([]string{"--encryption-key", key}, func(string) string { return "" })
	require.NoError(t, err)
	box, err := c.secretBox()
	require.NoError(t, err)
	require.NotEmpty(t, box.KeyID())
	c, err = loadConfig(nil, func(string) string { return "" })
	require.NoError(t, err)
	box, err = c.secretBox()
	require.NoError(t, err)
	require.Nil(t, box, "no key: secrets in plain text")
}

func TestLoopbackWithoutKeysIsAllowed(t *testing.T) {
	t.Parallel()
	for _, listen := range []string{"127.0.0.1:0", "localhost:8080", "[::1]:8080"} {
		_, err := loadConfig([]string{"--listen", listen}, func(string) string { return "" })
		require.NoError(t, err, listen)
	}
}

// TestServeRefusesPublicListenWithoutKeys runs the command itself: a
// non-zero exit status with the reason on stderr.
func TestServeRefusesPublicListenWithoutKeys(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := run([]string{"serve", "--listen", "0.0.0.0:0", "--data-dir", t.TempDir()}, func(string) string { return "" }, &stdout, &stderr)
	require.NotEqual(t, 0, code)
	require.Contains(t, stderr.String(), "refusing to listen on 0.0.0.0:0 without API keys")
}

// TestREADMEConfigurationMatchesSettings fails when README.md's
// configuration table drifts from the settings: regenerate it with
// `go run ./cmd/hooklane config-doc`.
func TestREADMEConfigurationMatchesSettings(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	const begin, end = "<!-- config-doc:begin -->\n", "<!-- config-doc:end -->"
	_, rest, ok := strings.Cut(string(readme), begin)
	require.True(t, ok, "README.md lacks %q", begin)
	table, _, ok := strings.Cut(rest, end)
	require.True(t, ok, "README.md lacks %q", end)
	var want bytes.Buffer
	configDoc(&want)
	require.Equal(t, want.String(), table, "README.md's configuration table is stale: run go run ./cmd/hooklane config-doc and paste it between the markers")
}

func TestConfigDocListsEverySetting(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.Equal(t, 0, run([]string{"config-doc"}, func(string) string { return "" }, &out, &out))
	for _, s := range settings(&Config{}) {
		require.Contains(t, out.String(), "| `"+s.env+"` | `--"+s.flag+"` |")
	}
}

func TestLoadConfigTrustedProxies(t *testing.T) {
	t.Parallel()
	c, err := loadConfig([]string{"--trusted-proxies", "10.0.0.0/8, 192.168.1.7 ,fd00::/8,::1"}, func(string) string { return "" })
	require.NoError(t, err)
	var got []string
	for _, p := range c.trustedProxies {
		got = append(got, p.String())
	}
	require.Equal(t, []string{"10.0.0.0/8", "192.168.1.7/32", "fd00::/8", "::1/128"}, got)
	c, err = loadConfig(nil, func(string) string { return "" })
	require.NoError(t, err)
	require.Empty(t, c.trustedProxies, "none is trusted by default")
}

func TestStaleCheckIntervalIsAtMostAQuarterOfTheStaleAge(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ interval, after, want time.Duration }{
		{60 * time.Second, 15 * time.Minute, 60 * time.Second},
		{60 * time.Second, 10 * time.Second, 2500 * time.Millisecond},
		{time.Second, 10 * time.Second, time.Second},
	} {
		got := staleCheckInterval(&Config{StalePollInterval: tc.interval, StaleQueuedAfter: tc.after})
		require.Equal(t, tc.want, got, "interval %s, stale after %s", tc.interval, tc.after)
	}
}

// TestLoadConfigQueueMessages: auto writes the JSON form an earlier
// release reads on SQS (a rolling upgrade shares the queue) and the binary
// form on the in-process queue; json and binary say it outright.
func TestLoadConfigQueueMessages(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--sqs-queue-url", "http://127.0.0.1:4566/000000000000/q.fifo"}, true},
		{[]string{"--sqs-queue-url", "http://127.0.0.1:4566/000000000000/q.fifo", "--queue-messages", "binary"}, false},
		{[]string{"--queue-messages", "json"}, true},
	} {
		c, err := loadConfig(tt.args, func(string) string { return "" })
		require.NoError(t, err)
		require.Equal(t, tt.want, c.jsonMessages(), "%v", tt.args)
	}
	_, err := loadConfig([]string{"--queue-messages", "xml"}, func(string) string { return "" })
	require.ErrorContains(t, err, "HOOKLANE_QUEUE_MESSAGES")
}
