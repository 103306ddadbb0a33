package metrics_test

import (
	"context"
	"errors"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/api/metrics"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/queue"
)

// value returns the sample of family name whose labels include every
// name=value pair of labels (a histogram gives its count).
func value(t *testing.T, m *metrics.Metrics, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, mt := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range mt.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue next
				}
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				return mt.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				return mt.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				return float64(mt.GetHistogram().GetSampleCount())
			default:
			}
		}
	}
	return 0
}

func TestStatusClass(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code int
		want string
	}{{0, "none"}, {99, "none"}, {101, "1xx"}, {200, "2xx"}, {204, "2xx"}, {302, "3xx"}, {404, "4xx"}, {429, "4xx"}, {503, "5xx"}, {600, "none"}}
	for _, tt := range tests {
		require.Equal(t, tt.want, metrics.StatusClass(tt.code), "code %d", tt.code)
	}
}

func TestObserveAttempt(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 24, 14, 0, 0, 0, time.UTC)
	m := metrics.New(metrics.Config{
		NowFunc:      func() time.Time { return now },
		PoolCodeFunc: func(id string) string { return map[string]string{"": "default", "P1": "bulk"}[id] },
	})
	created := now.Add(-90 * time.Second)
	m.ObserveAttempt(&dispatch.Job{Status: dispatch.StatusPending, DispatchPoolID: "P1", CreatedAt: created}, dispatch.Outcome{Attempted: true, Attempt: dispatch.Attempt{StatusCode: 503, DurationMs: 1000}})
	m.ObserveAttempt(&dispatch.Job{Status: dispatch.StatusPending, DispatchPoolID: "P1", CreatedAt: created}, dispatch.Outcome{Attempted: true, Attempt: dispatch.Attempt{DurationMs: 2000}, Err: errors.New("timeout")})
	m.ObserveAttempt(&dispatch.Job{Status: dispatch.StatusCompleted, DispatchPoolID: "P1", CreatedAt: created}, dispatch.Outcome{Attempted: true, Attempt: dispatch.Attempt{StatusCode: 200, DurationMs: 1000}})
	m.ObserveAttempt(&dispatch.Job{Status: dispatch.StatusError, CreatedAt: created}, dispatch.Outcome{Attempted: true, Attempt: dispatch.Attempt{StatusCode: 410}})

	require.InDelta(t, 1, value(t, m, "hooklane_deliveries_total", "pool", "bulk", "outcome", "retry", "status_class", "5xx"), 0)
	require.InDelta(t, 1, value(t, m, "hooklane_deliveries_total", "pool", "bulk", "outcome", "retry", "status_class", "none"), 0)
	require.InDelta(t, 1, value(t, m, "hooklane_deliveries_total", "pool", "bulk", "outcome", "completed", "status_class", "2xx"), 0)
	require.InDelta(t, 1, value(t, m, "hooklane_deliveries_total", "pool", "default", "outcome", "error", "status_class", "4xx"), 0)
	require.InDelta(t, 3, value(t, m, "hooklane_delivery_duration_seconds", "pool", "bulk"), 0)
	require.InDelta(t, 1, value(t, m, "hooklane_delivery_end_to_end_seconds", "pool", "bulk"), 0, "only a completed job ends its end-to-end time")

	mfs, err := m.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "hooklane_delivery_end_to_end_seconds" {
			require.InDelta(t, 90, mf.GetMetric()[0].GetHistogram().GetSampleSum(), 1e-9)
		}
	}
}

func TestEventTypeLabelIsBounded(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 24, 14, 0, 0, 0, time.UTC)
	lookups := 0
	registered := map[string]bool{"order.created": true}
	m := metrics.New(metrics.Config{
		NowFunc: func() time.Time { return now },
		TypeKnownFunc: func(_ context.Context, code string) (bool, error) {
			lookups++
			if code == "broken.lookup" {
				return false, errors.New("store down")
			}
			return registered[code], nil
		},
	})
	ctx := t.Context()
	m.ObserveIngest(ctx, "order.created", "accepted", 2)
	m.ObserveIngest(ctx, "order.created", "accepted", 1)
	m.ObserveIngest(ctx, "made.up", "rejected", 0)
	m.ObserveIngest(ctx, "broken.lookup", "failed", 0)
	require.InDelta(t, 2, value(t, m, "hooklane_events_ingested_total", "type", "order.created", "outcome", "accepted"), 0)
	require.InDelta(t, 1, value(t, m, "hooklane_events_ingested_total", "type", "other", "outcome", "rejected"), 0)
	require.InDelta(t, 1, value(t, m, "hooklane_events_ingested_total", "type", "other", "outcome", "failed"), 0)
	require.InDelta(t, 3, value(t, m, "hooklane_dispatch_jobs_created_total", "kind", "EVENT"), 0)
	require.Equal(t, 3, lookups, "the second order.created is answered from the cache")

	// A type registered later gets its label once the cached answer ages out.
	registered["made.up"] = true
	m.ObserveIngest(ctx, "made.up", "accepted", 0)
	require.InDelta(t, 0, value(t, m, "hooklane_events_ingested_total", "type", "made.up"), 0)
	now = now.Add(metrics.TypeCacheTTLDefault)
	m.ObserveIngest(ctx, "made.up", "accepted", 0)
	require.InDelta(t, 1, value(t, m, "hooklane_events_ingested_total", "type", "made.up", "outcome", "accepted"), 0)
}

func TestStreamClientsGauge(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{})
	g := m.StreamClients()
	g.Inc()
	g.Inc()
	g.Dec()
	require.InDelta(t, 1, value(t, m, "hooklane_stream_clients"), 0)

	n := 7
	pulled := metrics.New(metrics.Config{StreamClientsFunc: func() int { return n }})
	pulled.StreamClients().Inc() // ignored: the function is the source
	require.InDelta(t, 7, value(t, pulled, "hooklane_stream_clients"), 0)
}

// fakeQueue fails as told.
type fakeQueue struct {
	queue.Queue

	sendErr        error
	entryErrs      int
	receiveErr     error
	deleteErr      error
	deleteEntryErr error
}

func (f *fakeQueue) SendBatch(_ context.Context, msgs []queue.OutMessage) ([]queue.SendResult, error) {
	if f.sendErr != nil {
		return nil, f.sendErr
	}
	out := make([]queue.SendResult, len(msgs))
	for i := range min(f.entryErrs, len(msgs)) {
		out[i].Err = errors.New("entry failed")
	}
	return out, nil
}

func (f *fakeQueue) Receive(context.Context, queue.ReceiveParams) ([]queue.Message, error) {
	return nil, f.receiveErr
}

func (f *fakeQueue) Delete(context.Context, string) error { return f.deleteErr }

// DeleteBatch fails the whole call with deleteErr, or each entry with
// deleteEntryErr.
func (f *fakeQueue) DeleteBatch(_ context.Context, handles []string) ([]error, error) {
	if f.deleteErr != nil {
		return nil, f.deleteErr
	}
	out := make([]error, len(handles))
	for i := range out {
		out[i] = f.deleteEntryErr
	}
	return out, nil
}

func TestInstrumentedQueueCountsFailures(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{})
	fq := &fakeQueue{entryErrs: 2}
	q := m.InstrumentQueue(fq)
	ctx := t.Context()
	msgs := make([]queue.OutMessage, 5)

	_, err := q.SendBatch(ctx, msgs)
	require.NoError(t, err)
	fq.sendErr = errors.New("down")
	_, err = q.SendBatch(ctx, msgs)
	require.ErrorIs(t, err, fq.sendErr)
	require.InDelta(t, 7, value(t, m, "hooklane_queue_errors_total", "operation", "send"), 0)

	fq.receiveErr = errors.New("down")
	_, err = q.Receive(ctx, queue.ReceiveParams{})
	require.Error(t, err)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, _ = q.Receive(cancelled, queue.ReceiveParams{}) // shutdown, not a queue error
	require.InDelta(t, 1, value(t, m, "hooklane_queue_errors_total", "operation", "receive"), 0)

	fq.deleteErr = queue.ErrInvalidReceipt
	require.Error(t, q.Delete(ctx, "r"))
	fq.deleteErr = errors.New("down")
	require.Error(t, q.Delete(ctx, "r"))
	require.InDelta(t, 1, value(t, m, "hooklane_queue_errors_total", "operation", "delete"), 0)

	// A batch: a failed call counts every handle, expired receipts never.
	_, err = q.DeleteBatch(ctx, []string{"a", "b", "c"})
	require.Error(t, err)
	fq.deleteErr, fq.deleteEntryErr = nil, queue.ErrInvalidReceipt
	_, err = q.DeleteBatch(ctx, []string{"a", "b"})
	require.NoError(t, err)
	fq.deleteEntryErr = errors.New("internal")
	_, err = q.DeleteBatch(ctx, []string{"a", "b"})
	require.NoError(t, err)
	require.InDelta(t, 6, value(t, m, "hooklane_queue_errors_total", "operation", "delete"), 0)
}

func TestPollerMoves(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{})
	m.ObservePollerMoves("stale_queued", 3)
	m.ObservePollerMoves("stale_queued", 0)
	m.ObservePollerMoves("pending", 4)
	require.InDelta(t, 3, value(t, m, "hooklane_poller_moved_jobs_total", "poller", "stale_queued"), 0)
	require.InDelta(t, 4, value(t, m, "hooklane_poller_moved_jobs_total", "poller", "pending"), 0)
}
