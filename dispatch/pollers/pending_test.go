package pollers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/pollers"
	"github.com/hooklane/hooklane/queue"
	"github.com/hooklane/hooklane/queue/memqueue"
	"github.com/hooklane/hooklane/store"
)

// refusingQueue is an in-process queue whose sends fail: as a whole
// (wholeErr) or entry by entry (entryErr).
type refusingQueue struct {
	*memqueue.Queue

	wholeErr, entryErr error
}

func (q *refusingQueue) SendBatch(_ context.Context, msgs []queue.OutMessage) ([]queue.SendResult, error) {
	if q.wholeErr != nil {
		return nil, q.wholeErr
	}
	res := make([]queue.SendResult, len(msgs))
	for i := range res {
		res[i].Err = q.entryErr
	}
	return res, nil
}

// pendingStore hands out the given PENDING jobs once and accepts every
// update; the poller writes from several goroutines.
type pendingStore struct {
	mu   sync.Mutex
	jobs []*dispatch.Job
}

func (s *pendingStore) JobListDue(_ context.Context, p *dispatch.JobListDueParams) ([]*dispatch.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.Status != dispatch.StatusPending {
		return nil, nil
	}
	out := s.jobs
	s.jobs = nil
	return out, nil
}

func (s *pendingStore) JobUpdate(context.Context, *dispatch.JobUpdateParams) error { return nil }

// The rest of dispatch.LifecycleStore, unused by QueueDue.

func (s *pendingStore) EventIngest(context.Context, *dispatch.EventIngestParams) ([]dispatch.EventIngestResult, error) {
	return nil, store.ErrUnavailable
}

func (s *pendingStore) JobInsertMany(context.Context, *dispatch.JobInsertManyParams) error {
	return nil
}

func (s *pendingStore) JobGetByID(context.Context, string) (*dispatch.Job, error) {
	return nil, store.ErrNotFound
}

func (s *pendingStore) JobList(context.Context, *dispatch.JobListParams) (*dispatch.JobPage, error) {
	return &dispatch.JobPage{}, nil
}

func (s *pendingStore) JobListGroup(context.Context, *dispatch.JobListGroupParams) ([]*dispatch.Job, error) {
	return nil, nil
}

// lockedBuffer is a log sink safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p) //nolint:wrapcheck // in-memory
}

// logRecord returns the first JSON log record with the message msg.
func (l *lockedBuffer) logRecord(t *testing.T, msg string) map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for line := range strings.SplitSeq(l.b.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == msg {
			return rec
		}
	}
	t.Fatalf("no log record %q in:\n%s", msg, l.b.String())
	return nil
}

// TestPendingLogsTheQueueError: when the queue refuses the jobs the pending
// poller sends, its log line carries the queue's error — never error=<nil>
// — whether the send failed as a whole, entry by entry, or was skipped by
// the enqueuer's breaker.
func TestPendingLogsTheQueueError(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 24, 14, 0, 0, 0, time.UTC)
	pending := func(n int) []*dispatch.Job {
		out := make([]*dispatch.Job, n)
		for i := range out {
			out[i] = &dispatch.Job{
				ID: "J" + string(rune('A'+i)), Kind: dispatch.KindEvent, Status: dispatch.StatusPending,
				Delivery: dispatch.DeliveryPush, MaxAttempts: 8, NextAttemptAt: &now, CreatedAt: now, UpdatedAt: now, Version: 1,
			}
		}
		return out
	}
	tests := []struct {
		name  string
		q     *refusingQueue
		twice bool // a second round, inside the breaker's cooldown
		want  []string
	}{
		{
			name: "whole send", q: &refusingQueue{wholeErr: errors.New("dial tcp 127.0.0.1:4566: connection refused")},
			want: []string{"send 3 jobs", "connection refused"},
		},
		{
			name: "entries", q: &refusingQueue{entryErr: errors.New("MessageGroupId too long")},
			want: []string{"send job JA", "MessageGroupId too long", "and 2 more jobs failed to send"},
		},
		{
			name: "breaker", q: &refusingQueue{wholeErr: errors.New("dial tcp 127.0.0.1:4566: connection refused")}, twice: true,
			want: []string{"skipped", "connection refused"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.q.Queue = memqueue.New(memqueue.Config{})
			logs := &lockedBuffer{}
			logger := slog.New(slog.NewJSONHandler(logs, nil))
			st := &pendingStore{jobs: pending(3)}
			jobs := dispatch.NewLifecycle(dispatch.LifecycleConfig{
				Store: st, Queue: tt.q, NewID: func() string { return "E" },
				NowFunc: func() time.Time { return now }, Logger: slog.New(&switchHandler{to: &logger}),
			})
			p := pollers.NewPending(pollers.PendingConfig{Jobs: jobs, Logger: logger})
			if tt.twice {
				_, err := p.RunOnce(t.Context())
				require.NoError(t, err)
				logs = &lockedBuffer{}
				logger = slog.New(slog.NewJSONHandler(logs, nil))
				p = pollers.NewPending(pollers.PendingConfig{Jobs: jobs, Logger: logger})
				st.jobs = pending(3)
			}
			n, err := p.RunOnce(t.Context())
			require.NoError(t, err)
			require.Equal(t, 3, n)
			rec := logs.logRecord(t, "jobs back to pending after queue send failure")
			msg, ok := rec["error"].(string)
			require.True(t, ok, "the log line has no error: %v", rec)
			for _, w := range tt.want {
				require.Contains(t, msg, w)
			}
		})
	}
}

// switchHandler sends records to the handler of *to at the time of the
// record, so a test can swap the log sink of a component it built earlier.
type switchHandler struct{ to **slog.Logger }

func (h *switchHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return (*h.to).Handler().Enabled(ctx, l)
}

func (h *switchHandler) Handle(ctx context.Context, r slog.Record) error {
	return (*h.to).Handler().Handle(ctx, r) //nolint:wrapcheck // a pass-through
}

func (h *switchHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &attrHandler{switchHandler: h, attrs: as}
}

func (h *switchHandler) WithGroup(string) slog.Handler { return h }

// attrHandler is a switchHandler with attributes added.
type attrHandler struct {
	*switchHandler
	attrs []slog.Attr
}

func (h *attrHandler) Handle(ctx context.Context, r slog.Record) error {
	r.AddAttrs(h.attrs...)
	return h.switchHandler.Handle(ctx, r)
}
