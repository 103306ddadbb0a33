package operational_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/ingest/operational"
	"github.com/hooklane/hooklane/stream"
)

// syncBuffer is a bytes.Buffer the logger of several goroutines writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p) //nolint:wrapcheck // a bytes.Buffer never fails
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// sendError is what a real send to target answers when nothing listens on
// its port: Go's error names the URL, its user and query included.
func sendError(t *testing.T, target string) error {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, target, http.NoBody)
	require.NoError(t, err)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if resp != nil {
		_ = resp.Body.Close()
	}
	require.Error(t, err)
	return fmt.Errorf("send: %w", err)
}

// A subscription whose target carries a user, a password and a query token
// opens its circuit: neither the hooklane.* event, nor the status event
// the stream serves, nor the logs carry a secret part of the target.
func TestCircuitOpenedEventMasksTheTarget(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()

	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now: the send fails at once
	target := "http://alice:s3cretpass@" + addr + "/hooks/pathsecret?token=t0kensecret#fragsecret"
	secrets := []string{"alice", "s3cretpass", "pathsecret", "t0kensecret", "fragsecret"}
	sendErr := sendError(t, target)
	require.Contains(t, sendErr.Error(), "t0kensecret", "the raw error names the target's query")

	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var mu sync.Mutex
	var observed []stream.Event
	fwd := operational.NewForwarder(operational.ForwarderConfig{Ingest: f.p.Ingest.Gateway(), Subscriptions: f.p.Store, Logger: logger})
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = fwd.Run(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	lc := dispatch.NewLifecycle(dispatch.LifecycleConfig{
		Store: f.p.Store, Queue: f.p.Queue, NewID: f.p.IDs.New, Logger: logger,
		Circuit: dispatch.CircuitPolicy{Store: f.p.Store, Failures: 1, Cooldown: time.Minute},
		OnEventsFunc: func(j *dispatch.Job, events []stream.Event) {
			mu.Lock()
			observed = append(observed, events...)
			mu.Unlock()
			fwd.Observe(j, events)
		},
	})

	j := dispatch.NewTaskJob(&dispatch.TaskSpec{
		ID: f.p.IDs.New(), Code: "order.created", Payload: []byte(`{}`),
		Settings: dispatch.Settings{
			SubscriptionID: f.ops.ID, Subscription: f.ops.Code, Target: target,
			Mode: dispatch.ModeImmediate, Delivery: dispatch.DeliveryPush, MaxAgeSeconds: 3600,
			Retry: dispatch.Retry{MaxAttempts: 5, InitialBackoffSeconds: 1, MaxBackoffSeconds: 1},
		},
	}, time.Now().UTC().Truncate(time.Millisecond))
	require.NoError(t, lc.Insert(ctx, []*dispatch.Job{j}))
	held, err := lc.HoldForCircuit(ctx, j, time.Minute)
	require.NoError(t, err)
	require.False(t, held)
	require.NoError(t, lc.Claim(ctx, j, dispatch.ClaimParams{Worker: "w", Lease: time.Minute}))
	_, err = lc.RecordOutcome(ctx, j, dispatch.Outcome{Attempted: true, Err: sendErr})
	require.NoError(t, err)

	got := f.event(t, operational.TypeCircuitOpened)
	var data map[string]any
	require.NoError(t, json.Unmarshal(got.Event.Data, &data))
	reason, ok := data["reason"].(string)
	require.True(t, ok)
	require.Contains(t, reason, "http://***@"+addr+"/***", "the reason still says where the send went")
	raw := string(got.Event.Data)
	for _, s := range secrets {
		require.NotContains(t, raw, s, "the hooklane.* event carries no secret part of the target")
	}

	// The status event the stream serves: its reason is masked as the
	// operational event's (api's maskedStatusEvent applies the same
	// function to what the store holds; here, the function itself).
	mu.Lock()
	var opened *stream.Event
	for i := range observed {
		if observed[i].Type == stream.TypeSubscriptionCircuitOpened {
			opened = &observed[i]
		}
	}
	mu.Unlock()
	require.NotNil(t, opened)
	require.Equal(t, reason, endpoint.MaskTargetsInText(opened.Data.Reason))

	// The discarded job of the same target: its error is masked too.
	discarded := j.StatusEvent(f.p.IDs.New(), stream.TypeDispatchDiscarded, time.Now())
	discarded.Data.Error = sendErr.Error()
	fwd.Observe(j, []stream.Event{discarded})
	gotDiscarded := f.event(t, operational.TypeDispatchDiscarded)
	for _, s := range secrets {
		require.NotContains(t, string(gotDiscarded.Event.Data), s, "the discarded event carries no secret part")
	}

	for _, s := range secrets {
		require.NotContains(t, logs.String(), s, "the logs carry no secret part of the target")
	}
}
