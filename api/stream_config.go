package api

import (
	"time"

	"github.com/hooklane/hooklane/stream"
)

// Stream defaults.
const (
	// StreamPingIntervalDefault is the period of the `: ping` comment (API.md
	// promises at least every 15 s).
	StreamPingIntervalDefault = 15 * time.Second
	// StreamRetryDefault is the reconnection delay advertised by `retry:`.
	StreamRetryDefault = 2 * time.Second
	// StreamWriteTimeoutDefault bounds one write to a client: a client that
	// does not read for that long is disconnected.
	StreamWriteTimeoutDefault = 10 * time.Second
	// StreamRetentionDefault is how long status events are kept.
	StreamRetentionDefault = time.Hour
)

// StreamConfig configures GET /api/stream and /api/stream/ws.
type StreamConfig struct {
	// Hub publishes the live events; nil answers 503.
	Hub *stream.Hub
	// PingInterval is the heartbeat period. Default 15 s.
	PingInterval time.Duration
	// Retry is the client reconnection delay advertised. Default 2 s.
	Retry time.Duration
	// WriteTimeout bounds one write to a client. Default 10 s.
	WriteTimeout time.Duration
	// Retention is the status event retention window: a replay starting
	// before it gets a stream.gap event first. Default 1 h.
	Retention time.Duration
	// AuthRecheck is how often an open stream authenticated by a client
	// token or a client-scoped key authenticates again against the store
	// (api/stream_auth.go). Default StreamAuthRecheckDefault.
	AuthRecheck time.Duration
	// MaxPerKey is how many streams one key or token may hold open on this
	// instance; past it a new one answers 429. Default
	// StreamMaxPerKeyDefault. Requests without a key (authentication off)
	// are not counted.
	MaxPerKey int
	// MaxSubscriptions is how many subscriptions one WebSocket connection
	// may hold. Default StreamMaxSubscriptionsDefault.
	MaxSubscriptions int
}

func (sc *StreamConfig) withDefaults() StreamConfig {
	out := *sc
	if out.PingInterval <= 0 {
		out.PingInterval = StreamPingIntervalDefault
	}
	if out.Retry <= 0 {
		out.Retry = StreamRetryDefault
	}
	if out.WriteTimeout <= 0 {
		out.WriteTimeout = StreamWriteTimeoutDefault
	}
	if out.Retention <= 0 {
		out.Retention = StreamRetentionDefault
	}
	if out.AuthRecheck <= 0 {
		out.AuthRecheck = StreamAuthRecheckDefault
	}
	if out.MaxPerKey <= 0 {
		out.MaxPerKey = StreamMaxPerKeyDefault
	}
	if out.MaxSubscriptions <= 0 {
		out.MaxSubscriptions = StreamMaxSubscriptionsDefault
	}
	return out
}
