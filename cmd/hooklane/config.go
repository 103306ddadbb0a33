package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hooklane/hooklane/api"
	"github.com/hooklane/hooklane/storage/secretbox"
	"github.com/hooklane/hooklane/storage/sqlitestore"
)

// Config is every setting of `hooklane serve`. Each field is a flag and a
// HOOKLANE_* environment variable (the flag wins); see settings for the
// names and defaults, which API.md §9 makes part of the contract.
type Config struct {
	// Listen is the HTTP listen address. Default 127.0.0.1:8080.
	Listen string
	// MetricsListen, when set, is the address /metrics is served on, and
	// only there (not on Listen). Default empty: /metrics on Listen. Metrics
	// hold no secrets and take no writes, so it may be any address, with or
	// without API keys.
	MetricsListen string
	// DataDir holds the embedded SQLite store. Default ./data.
	DataDir string
	// SQLiteSynchronous is the embedded store's durability at commit: full
	// (default: an accepted event survives a power loss or OS crash, one
	// fsync per group commit) or normal (it survives a crash of the process;
	// the last commits may be lost with the machine).
	SQLiteSynchronous string
	// SQLiteCommitWindow is how long the embedded store's writer waits
	// after a write for more writes to share its commit, when writes are
	// concurrent and fewer than eight are gathered (see
	// sqlitestore.Config.CommitWindow). Default 500µs; 0 commits at once;
	// at most 50ms.
	SQLiteCommitWindow time.Duration
	// MongoURI selects the MongoDB store when set. Default empty (embedded).
	MongoURI string
	// MongoDatabase is the MongoDB database name. Default hooklane.
	MongoDatabase string
	// SQSQueueURL selects the SQS FIFO queue when set. Default empty
	// (in-process queue).
	SQSQueueURL string
	// SQSEndpoint overrides the SQS endpoint (LocalStack). Default empty.
	SQSEndpoint string
	// SQSRegion is the AWS region; empty uses the standard AWS chain.
	SQSRegion string
	// APIKeys are name:role:key entries, comma-separated. Default empty:
	// authentication off, loopback only.
	APIKeys string
	// APIKeysFile is a file of API keys, one name:role:key entry per line
	// (# starts a comment line), added to APIKeys. Default empty.
	APIKeysFile string
	// TrustedProxies are the reverse proxies and load balancers whose
	// X-Forwarded-For / X-Real-IP name the client in the access log, as
	// comma-separated CIDRs or IP addresses. Default empty: none is trusted,
	// and the log shows the connection's own address.
	TrustedProxies string
	// AllowPrivateTargets permits loopback and private webhook targets.
	AllowPrivateTargets bool
	// AllowUnknownTypes accepts events of unregistered types.
	AllowUnknownTypes bool
	// StreamRetention is how long status events stay replayable. Default 1h.
	StreamRetention time.Duration
	// StreamAuthRecheck is how often an open stream of a client token or a
	// client-scoped key authenticates again against the store. Default 5s.
	StreamAuthRecheck time.Duration
	// MaxStreamsPerKey is how many streams one key or token may hold open
	// on one instance. Default 20.
	MaxStreamsPerKey int
	// MaxStreamSubscriptions is how many subscriptions one WebSocket stream
	// connection may hold. Default 20.
	MaxStreamSubscriptions int
	// PendingPollInterval is the pending poller's period. Default 5s.
	PendingPollInterval time.Duration
	// StaleQueuedAfter is the QUEUED age that counts as lost. Default 15m.
	StaleQueuedAfter time.Duration
	// StalePollInterval is the stale-queued check's period, at most a
	// quarter of StaleQueuedAfter (staleCheckInterval). Default 60s.
	StalePollInterval time.Duration
	// LeasePollInterval is the expired-lease check's period. Default 10s.
	LeasePollInterval time.Duration
	// FanOutPollInterval is the fan-out recovery period. Default 30s.
	FanOutPollInterval time.Duration
	// FanOutGrace is how old an event not fanned out must be before
	// recovery fans it out. Default 30s.
	FanOutGrace time.Duration
	// PollerBatchSize bounds one round of each poller. Default 500.
	PollerBatchSize int
	// JobRetention is how long finished jobs are kept. Default 168h.
	JobRetention time.Duration
	// EventRetention is how long events are kept (longer while one of
	// their jobs is unfinished). Default 168h.
	EventRetention time.Duration
	// RetentionPollInterval is the period of the retention pollers.
	// Default 1m.
	RetentionPollInterval time.Duration
	// Lease is how long a worker's claim lasts beyond the delivery timeout.
	// Default 2m.
	Lease time.Duration
	// ReceiveVisibility is the visibility timeout the router receives
	// with, extended while a delivery of the message runs: the longest a
	// message taken by a killed instance stays invisible. Default 30s.
	ReceiveVisibility time.Duration
	// ShutdownDrain bounds how long a stopping router lets its deliveries
	// in flight finish before cancelling them. Default 25s.
	ShutdownDrain time.Duration
	// MaxEventBytes is the largest single event. Default 1 MiB.
	MaxEventBytes int64
	// TransformTimeout is the longest run of a subscription's
	// transformation at delivery (API.md §16). Default 100ms.
	TransformTimeout time.Duration
	// QueueMessages is the form of the queue messages this instance
	// writes: binary, json (read by releases before 2026-11-28, for a
	// rolling upgrade from one), or auto (binary on the in-process queue,
	// json on SQS). Default auto.
	QueueMessages string
	// MaxRequestBytes is the largest ingest request. Default 10 MiB.
	MaxRequestBytes int64
	// MaxBatch is the most events in one batch. Default 1000.
	MaxBatch int
	// Roles are the roles this process runs: api, router, pollers.
	// Default all three.
	Roles string
	// LogFormat is json or text. Default text.
	LogFormat string
	// LogLevel is debug, info, warn or error. Default info.
	LogLevel string
	// ShutdownTimeout bounds a graceful stop. Default 30s.
	ShutdownTimeout time.Duration
	// RouterConcurrency bounds the deliveries one process runs at once.
	// Default 1024.
	RouterConcurrency int
	// Tracing configures OpenTelemetry tracing from the standard OTEL_*
	// variables (API.md §9); it has no flag. Set by loadConfig.
	Tracing TracingConfig
	// EncryptionKey is base64 of the 32-byte key that encrypts stored
	// secrets (AES-256-GCM, API.md §14). Default empty: stored in plain
	// text, with a warning at start. A store holding secrets encrypted
	// with another key, or encrypted while none is set, refuses to start.
	EncryptionKey string
	// CircuitFailures is how many consecutive failed attempts open a
	// subscription's circuit (API.md §12). Default 10; 0 never opens one.
	CircuitFailures int
	// CircuitCooldown is the first wait of an open circuit before its probe;
	// it doubles after each failed probe, up to 10 minutes. Default 30s.
	CircuitCooldown time.Duration
	// AutoDisableAfter pauses a subscription whose every attempt failed for
	// this long. Default 120h; 0 never does.
	AutoDisableAfter time.Duration
	// ReplayRate is the most jobs per second replays create on this
	// instance (API.md §13). Default 2000.
	ReplayRate int
	// ReplayBacklog is the bound on a subscription's unfinished jobs above
	// which its replay waits. Default 1000.
	ReplayBacklog int
	// MaxReplaysPerSubscription bounds the RUNNING replays of one
	// subscription (409 past it). Default 1.
	MaxReplaysPerSubscription int
	// MaxReplaysPerClient bounds the RUNNING replays of one client's
	// subscriptions (429 past it). Default 5.
	MaxReplaysPerClient int
	// ReplayLease is how long an instance holds a replay between
	// checkpoints: a replay whose instance died resumes elsewhere after
	// that long. Default 30s.
	ReplayLease time.Duration

	// keys are the parsed API keys of APIKeys and APIKeysFile, set by
	// loadConfig; only their hashes are kept.
	keys *api.KeySet
	// trustedProxies is TrustedProxies parsed, set by validate.
	trustedProxies []netip.Prefix
	// roundTrips, when set (by `hooklane bench --mode mongo-sqs`), counts
	// the MongoDB commands and SQS requests of the process.
	roundTrips *roundTrips
}

// secretBox returns the box that seals stored secrets with EncryptionKey;
// nil without a key. Errors name the setting, never the key.
//
//nolint:nilnil // no key is no box: secrets stored in plain text (a warning at start)
func (c *Config) secretBox() (*secretbox.Box, error) {
	if c.EncryptionKey == "" {
		return nil, nil
	}
	key, err := secretbox.ParseKey(c.EncryptionKey)
	if err != nil {
		return nil, fmt.Errorf("HOOKLANE_ENCRYPTION_KEY (--encryption-key): %w", err)
	}
	box, err := secretbox.New(key)
	if err != nil {
		return nil, fmt.Errorf("HOOKLANE_ENCRYPTION_KEY (--encryption-key): %w", err)
	}
	return box, nil
}

// setting is one configuration knob: its flag, its environment variable,
// its default and where it lands.
type setting struct {
	flag, env, def, usage string
	set                   func(string) error
}

func settings(c *Config) []setting {
	str := func(dst *string) func(string) error {
		return func(v string) error { *dst = v; return nil }
	}
	boolean := func(dst *bool) func(string) error {
		return func(v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return errors.New("must be true or false")
			}
			*dst = b
			return nil
		}
	}
	dur := func(dst *time.Duration) func(string) error {
		return func(v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return errors.New("must be a positive duration such as 30s or 5m")
			}
			*dst = d
			return nil
		}
	}
	i64 := func(dst *int64) func(string) error {
		return func(v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return errors.New("must be a positive integer")
			}
			*dst = n
			return nil
		}
	}
	// The settings where 0 means "never".
	orZero := func(dst *int) func(string) error {
		return func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return errors.New("must be 0 (never) or a positive integer")
			}
			*dst = n
			return nil
		}
	}
	durOrZero := func(dst *time.Duration) func(string) error {
		return func(v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return errors.New("must be 0 (never) or a positive duration such as 30s or 120h")
			}
			*dst = d
			return nil
		}
	}
	integer := func(dst *int) func(string) error {
		return func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return errors.New("must be a positive integer")
			}
			*dst = n
			return nil
		}
	}
	encryptionKey := func(dst *string) func(string) error {
		return func(v string) error {
			if v != "" {
				if _, err := secretbox.ParseKey(v); err != nil {
					return err
				}
			}
			*dst = v
			return nil
		}
	}
	return []setting{
		{"listen", "HOOKLANE_LISTEN", "127.0.0.1:8080", "HTTP listen address", str(&c.Listen)},
		{"metrics-listen", "HOOKLANE_METRICS_LISTEN", "", "serve /metrics on this address only, not on --listen (empty: on --listen)", str(&c.MetricsListen)},
		{"data-dir", "HOOKLANE_DATA_DIR", "./data", "embedded store directory", str(&c.DataDir)},
		{"sqlite-commit-window", "HOOKLANE_SQLITE_COMMIT_WINDOW", "500us", "how long the embedded store waits after a write for more to share its commit (0 to 50ms; 0 commits at once)", durOrZero(&c.SQLiteCommitWindow)},
		{"sqlite-synchronous", "HOOKLANE_SQLITE_SYNCHRONOUS", "full", "embedded store durability: full (a 201 survives power loss; one fsync per group commit) or normal (survives a process crash only)", str(&c.SQLiteSynchronous)},
		{"mongo-uri", "HOOKLANE_MONGO_URI", "", "MongoDB connection string (empty: embedded store)", str(&c.MongoURI)},
		{"mongo-database", "HOOKLANE_MONGO_DATABASE", "hooklane", "MongoDB database name", str(&c.MongoDatabase)},
		{"sqs-queue-url", "HOOKLANE_SQS_QUEUE_URL", "", "SQS FIFO queue URL (empty: in-process queue)", str(&c.SQSQueueURL)},
		{"sqs-endpoint", "HOOKLANE_SQS_ENDPOINT", "", "SQS endpoint override, e.g. LocalStack (empty: AWS)", str(&c.SQSEndpoint)},
		{"sqs-region", "HOOKLANE_SQS_REGION", "", "AWS region of the queue (empty: the standard AWS chain)", str(&c.SQSRegion)},
		{"api-keys", "HOOKLANE_API_KEYS", "", "API keys as name:role:key or name:role:key:clientId (scoped to a client), comma-separated (empty: auth off, loopback only)", str(&c.APIKeys)},
		{"api-keys-file", "HOOKLANE_API_KEYS_FILE", "", "file of API keys, one name:role:key[:clientId] per line, # comments (added to --api-keys)", str(&c.APIKeysFile)},
		{"trusted-proxies", "HOOKLANE_TRUSTED_PROXIES", "", "proxies whose X-Forwarded-For names the client, comma-separated CIDRs or IPs (empty: none)", str(&c.TrustedProxies)},
		{"allow-private-targets", "HOOKLANE_ALLOW_PRIVATE_TARGETS", "false", "permit loopback/private webhook targets", boolean(&c.AllowPrivateTargets)},
		{"allow-unknown-types", "HOOKLANE_ALLOW_UNKNOWN_TYPES", "false", "accept events of unregistered types", boolean(&c.AllowUnknownTypes)},
		{"stream-retention", "HOOKLANE_STREAM_RETENTION", "1h", "how long status events stay replayable", dur(&c.StreamRetention)},
		{"stream-auth-recheck", "HOOKLANE_STREAM_AUTH_RECHECK", "5s", "how often an open stream of a client token or client-scoped key checks its credential in the store (a revocation ends it within this)", dur(&c.StreamAuthRecheck)},
		{"max-streams-per-key", "HOOKLANE_MAX_STREAMS_PER_KEY", "20", "most streams (SSE and WebSocket) one key or token holds open on this instance (429 past it)", integer(&c.MaxStreamsPerKey)},
		{"max-stream-subscriptions", "HOOKLANE_MAX_STREAM_SUBSCRIPTIONS", "20", "most subscriptions one WebSocket stream connection holds", integer(&c.MaxStreamSubscriptions)},
		{"pending-poll-interval", "HOOKLANE_PENDING_POLL_INTERVAL", "5s", "pending poller period", dur(&c.PendingPollInterval)},
		{"stale-queued-after", "HOOKLANE_STALE_QUEUED_AFTER", "15m", "QUEUED age that counts as lost", dur(&c.StaleQueuedAfter)},
		{"stale-poll-interval", "HOOKLANE_STALE_POLL_INTERVAL", "60s", "period of the check for jobs QUEUED too long (at most a quarter of the stale-queued age)", dur(&c.StalePollInterval)},
		{"lease-poll-interval", "HOOKLANE_LEASE_POLL_INTERVAL", "10s", "period of the check for expired leases (crashed workers)", dur(&c.LeasePollInterval)},
		{"fanout-poll-interval", "HOOKLANE_FANOUT_POLL_INTERVAL", "30s", "period of the fan-out recovery (events stored without their jobs)", dur(&c.FanOutPollInterval)},
		{"fanout-grace", "HOOKLANE_FANOUT_GRACE", "30s", "age at which fan-out recovery takes over an event not fanned out", dur(&c.FanOutGrace)},
		{"poller-batch-size", "HOOKLANE_POLLER_BATCH_SIZE", "500", "most records one poller round handles", integer(&c.PollerBatchSize)},
		{"job-retention", "HOOKLANE_JOB_RETENTION", "168h", "how long finished jobs are kept", dur(&c.JobRetention)},
		{"event-retention", "HOOKLANE_EVENT_RETENTION", "168h", "how long events are kept (longer while a job of theirs is unfinished)", dur(&c.EventRetention)},
		{"retention-poll-interval", "HOOKLANE_RETENTION_POLL_INTERVAL", "1m", "period of the retention pollers (status events, jobs, events)", dur(&c.RetentionPollInterval)},
		{"lease", "HOOKLANE_LEASE", "2m", "how long a worker's claim on a job lasts", dur(&c.Lease)},
		{"receive-visibility", "HOOKLANE_RECEIVE_VISIBILITY", "30s", "visibility timeout of a received message, extended while its delivery runs: the longest a message taken by a killed instance waits", dur(&c.ReceiveVisibility)},
		{"shutdown-drain", "HOOKLANE_SHUTDOWN_DRAIN", "25s", "how long a stopping router lets deliveries in flight finish before cancelling them", dur(&c.ShutdownDrain)},
		{"max-event-bytes", "HOOKLANE_MAX_EVENT_BYTES", "1048576", "largest single event", i64(&c.MaxEventBytes)},
		{"transform-timeout", "HOOKLANE_TRANSFORM_TIMEOUT", "100ms", "longest run of a subscription's transformation at delivery (past it the attempt fails, not retried)", dur(&c.TransformTimeout)},
		{"queue-messages", "HOOKLANE_QUEUE_MESSAGES", "auto", "form of the queue messages written: binary, json (read by releases before 2026-11-28: for a rolling upgrade from one) or auto (binary on the in-process queue, json on SQS)", str(&c.QueueMessages)},
		{"max-request-bytes", "HOOKLANE_MAX_REQUEST_BYTES", "10485760", "largest ingest request", i64(&c.MaxRequestBytes)},
		{"max-batch", "HOOKLANE_MAX_BATCH", "1000", "most events in one batch", integer(&c.MaxBatch)},
		{"roles", "HOOKLANE_ROLES", "api,router,pollers", "roles this process runs: api, router, pollers", str(&c.Roles)},
		{"log-format", "HOOKLANE_LOG_FORMAT", "text", "log format: json or text", str(&c.LogFormat)},
		{"log-level", "HOOKLANE_LOG_LEVEL", "info", "log level: debug, info, warn or error", str(&c.LogLevel)},
		{"shutdown-timeout", "HOOKLANE_SHUTDOWN_TIMEOUT", "30s", "how long a graceful stop may take", dur(&c.ShutdownTimeout)},
		{"router-concurrency", "HOOKLANE_ROUTER_CONCURRENCY", "1024", "most deliveries in flight in this process", integer(&c.RouterConcurrency)},
		{"encryption-key", "HOOKLANE_ENCRYPTION_KEY", "", "base64 of 32 bytes: secrets are stored encrypted with it (AES-256-GCM); prefer the variable to the flag, which shows in process lists", encryptionKey(&c.EncryptionKey)},
		{"circuit-failures", "HOOKLANE_CIRCUIT_FAILURES", "10", "consecutive failed attempts that open a subscription's circuit (0: never)", orZero(&c.CircuitFailures)},
		{"circuit-cooldown", "HOOKLANE_CIRCUIT_COOLDOWN", "30s", "first wait of an open circuit before its probe (doubles per failed probe, at most 10m)", dur(&c.CircuitCooldown)},
		{"auto-disable-after", "HOOKLANE_AUTO_DISABLE_AFTER", "120h", "a subscription whose every attempt failed for this long is disabled (0: never)", durOrZero(&c.AutoDisableAfter)},
		{"replay-rate", "HOOKLANE_REPLAY_RATE", "2000", "most jobs per second replays create on this instance", integer(&c.ReplayRate)},
		{"replay-backlog", "HOOKLANE_REPLAY_BACKLOG", "1000", "a replay waits while its subscription has more unfinished jobs than this", integer(&c.ReplayBacklog)},
		{"max-replays-per-subscription", "HOOKLANE_MAX_REPLAYS_PER_SUBSCRIPTION", "1", "most replays of one subscription running at once (409 past it)", integer(&c.MaxReplaysPerSubscription)},
		{"max-replays-per-client", "HOOKLANE_MAX_REPLAYS_PER_CLIENT", "5", "most replays of one client's subscriptions running at once (429 past it)", integer(&c.MaxReplaysPerClient)},
		{"replay-lease", "HOOKLANE_REPLAY_LEASE", "30s", "how long an instance holds a replay between checkpoints (a replay of a dead instance resumes after it)", dur(&c.ReplayLease)},
	}
}

// funcValue adapts a setter to flag.Value.
type funcValue struct {
	set    func(string) error
	cur    string
	isBool bool
}

// IsBoolFlag lets a boolean flag stand alone (--allow-private-targets).
func (f *funcValue) IsBoolFlag() bool { return f.isBool }

func (f *funcValue) String() string { return f.cur }

func (f *funcValue) Set(v string) error {
	if err := f.set(v); err != nil {
		return err
	}
	f.cur = v
	return nil
}

// loadConfig reads the flags in args, then the environment for every flag
// not given, then the defaults; it validates the result and reports every
// problem at once, each naming its flag and variable.
func loadConfig(args []string, getenv func(string) string) (*Config, error) {
	c := &Config{}
	all := settings(c)
	fs := serveFlags(all)
	// The caller reports a bad flag; -h is answered by serveHelp.
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("parse flags: %w", err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var errs []error
	for _, s := range all {
		if given[s.flag] {
			continue
		}
		if v := getenv(s.env); v != "" {
			if err := s.set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s (--%s): %w", s.env, s.flag, err))
			}
			continue
		}
		if err := s.set(s.def); err != nil {
			panic(fmt.Sprintf("default of --%s is invalid: %v", s.flag, err)) // programmer error
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	keys, err := loadKeys(c.APIKeys, c.APIKeysFile)
	if err != nil {
		return nil, err
	}
	c.keys = keys
	c.Tracing = tracingConfig(getenv)
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// serveFlags returns the flag set of `hooklane serve`: one flag per setting.
func serveFlags(all []setting) *flag.FlagSet {
	fs := flag.NewFlagSet("hooklane serve", flag.ContinueOnError)
	for _, s := range all {
		fs.Var(&funcValue{set: s.set, cur: s.def, isBool: s.def == "true" || s.def == "false"}, s.flag, fmt.Sprintf("%s (env %s, default %q)", s.usage, s.env, s.def))
	}
	return fs
}

// serveHelp writes the help of `hooklane serve -h`: every flag with its
// environment variable and default.
func serveHelp(w io.Writer) {
	fs := serveFlags(settings(&Config{}))
	fs.SetOutput(w)
	fmt.Fprintln(w, "usage: hooklane serve [flags]\n\nEvery flag is also an environment variable; the flag wins.\n\nflags:")
	fs.PrintDefaults()
}

// roles returns the roles to run.
func (c *Config) roles() map[string]bool {
	out := map[string]bool{}
	for r := range strings.SplitSeq(c.Roles, ",") {
		if r = strings.TrimSpace(r); r != "" {
			out[r] = true
		}
	}
	return out
}

// jsonMessages reports whether the queue messages are written in the JSON
// form (see QueueMessages).
func (c *Config) jsonMessages() bool {
	return c.QueueMessages == "json" || (c.QueueMessages == "auto" && c.SQSQueueURL != "")
}

func (c *Config) validate() error {
	var errs []error
	for r := range c.roles() {
		if !slices.Contains([]string{"api", "router", "pollers"}, r) {
			errs = append(errs, fmt.Errorf("HOOKLANE_ROLES (--roles): unknown role %q: use api, router, pollers", r))
		}
	}
	if len(c.roles()) == 0 {
		errs = append(errs, errors.New("HOOKLANE_ROLES (--roles): name at least one role"))
	}
	if c.LogFormat != "json" && c.LogFormat != "text" {
		errs = append(errs, errors.New("HOOKLANE_LOG_FORMAT (--log-format): must be json or text"))
	}
	if !slices.Contains([]string{"auto", "binary", "json"}, c.QueueMessages) {
		errs = append(errs, errors.New("HOOKLANE_QUEUE_MESSAGES (--queue-messages): must be auto, binary or json"))
	}
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.LogLevel) {
		errs = append(errs, errors.New("HOOKLANE_LOG_LEVEL (--log-level): must be debug, info, warn or error"))
	}
	if c.MaxEventBytes > c.MaxRequestBytes {
		errs = append(errs, errors.New("HOOKLANE_MAX_EVENT_BYTES (--max-event-bytes): must not exceed HOOKLANE_MAX_REQUEST_BYTES"))
	}
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		errs = append(errs, fmt.Errorf("HOOKLANE_LISTEN (--listen): %q is not host:port", c.Listen))
	} else if c.keys.Len() == 0 && !isLoopback(host) {
		errs = append(errs, fmt.Errorf("HOOKLANE_LISTEN (--listen): refusing to listen on %s without API keys: set HOOKLANE_API_KEYS (--api-keys) or HOOKLANE_API_KEYS_FILE (--api-keys-file), or listen on 127.0.0.1", c.Listen))
	}
	if c.SQLiteSynchronous != "full" && c.SQLiteSynchronous != "normal" {
		errs = append(errs, errors.New("HOOKLANE_SQLITE_SYNCHRONOUS (--sqlite-synchronous): must be full or normal"))
	}
	if c.SQLiteCommitWindow < 0 || c.SQLiteCommitWindow > sqlitestore.MaxCommitWindow {
		errs = append(errs, fmt.Errorf("HOOKLANE_SQLITE_COMMIT_WINDOW (--sqlite-commit-window): must be between 0 and %v", sqlitestore.MaxCommitWindow))
	}
	proxies, err := parseTrustedProxies(c.TrustedProxies)
	if err != nil {
		errs = append(errs, fmt.Errorf("HOOKLANE_TRUSTED_PROXIES (--trusted-proxies): %w", err))
	}
	c.trustedProxies = proxies
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			errs = append(errs, fmt.Errorf("HOOKLANE_METRICS_LISTEN (--metrics-listen): %q is not host:port", c.MetricsListen))
		}
	}
	if c.MongoURI == "" && c.DataDir == "" {
		errs = append(errs, errors.New("HOOKLANE_DATA_DIR (--data-dir): required for the embedded store"))
	}
	return errors.Join(errs...)
}

// parseTrustedProxies reads comma-separated CIDRs and IP addresses (an
// address is its own /32 or /128).
func parseTrustedProxies(spec string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	var errs []error
	for part := range strings.SplitSeq(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if p, err := netip.ParsePrefix(part); err == nil {
			out = append(out, p.Masked())
			continue
		}
		if a, err := netip.ParseAddr(part); err == nil && a.Zone() == "" {
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		errs = append(errs, fmt.Errorf("%q is neither a CIDR nor an IP address", part))
	}
	return out, errors.Join(errs...)
}

// loadKeys parses the keys of HOOKLANE_API_KEYS and of the file
// HOOKLANE_API_KEYS_FILE names. Errors name the setting, never a key.
func loadKeys(spec, file string) (*api.KeySet, error) {
	fromEnv, err := api.ParseKeys(spec)
	if err != nil {
		return nil, fmt.Errorf("HOOKLANE_API_KEYS (--api-keys): %w", err)
	}
	var fromFile *api.KeySet
	if file != "" {
		b, err := os.ReadFile(file) //nolint:gosec // G304: the keys file is the path the operator configured
		if err != nil {
			return nil, fmt.Errorf("HOOKLANE_API_KEYS_FILE (--api-keys-file): read keys: %w", err)
		}
		if fromFile, err = api.ParseKeyFile(string(b)); err != nil {
			return nil, fmt.Errorf("HOOKLANE_API_KEYS_FILE (--api-keys-file) %s: %w", file, err)
		}
	}
	ks, err := api.JoinKeys(fromEnv, fromFile)
	if err != nil {
		return nil, fmt.Errorf("HOOKLANE_API_KEYS (--api-keys) and HOOKLANE_API_KEYS_FILE (--api-keys-file): %w", err)
	}
	return ks, nil
}

// configDoc writes the configuration reference as the Markdown table the
// README carries between its config-doc markers.
func configDoc(w io.Writer) {
	fmt.Fprintln(w, "| env | flag | default | meaning |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, s := range settings(&Config{}) {
		def := "empty"
		if s.def != "" {
			def = "`" + s.def + "`"
		}
		fmt.Fprintf(w, "| `%s` | `--%s` | %s | %s |\n", s.env, s.flag, def, strings.ReplaceAll(s.usage, "|", "\\|"))
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
