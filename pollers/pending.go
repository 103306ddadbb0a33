package pollers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/stream"
)

// PendingIntervalDefault is the pending poller's period.
const PendingIntervalDefault = 5 * time.Second

// pendingWriters bounds the job moves one round runs at once.
const pendingWriters = 16

// JobStore is what the job pollers need of the store.
type JobStore interface {
	JobListDue(ctx context.Context, p *dispatch.JobListDueParams) ([]*dispatch.Job, error)
	JobUpdate(ctx context.Context, p *dispatch.JobUpdateParams) error
}

// Enqueuer sends QUEUED jobs to the queue.
type Enqueuer interface {
	Enqueue(ctx context.Context, jobs []*dispatch.Job) (int, error)
}

// PendingConfig configures the pending poller.
type PendingConfig struct {
	Store    JobStore
	Enqueuer Enqueuer
	// Interval is the period. Default 5 s.
	Interval time.Duration
	// BatchSize bounds one round. Default 500.
	BatchSize int
	NewID     func() string
	Logger    *slog.Logger
	NowFunc   func() time.Time
}

// Pending moves PENDING jobs that are due to QUEUED and sends them, in
// group order. The move is a version-checked write, so of several instances
// exactly one queues a given job in a round.
type Pending struct {
	cfg PendingConfig
}

// NewPending returns the pending poller.
func NewPending(cfg PendingConfig) *Pending {
	cfg.Interval = orDefault(cfg.Interval, PendingIntervalDefault)
	cfg.BatchSize = orDefaultInt(cfg.BatchSize, BatchSizeDefault)
	cfg.Logger = orLogger(cfg.Logger).With("component", "pending_poller")
	cfg.NowFunc = orNow(cfg.NowFunc)
	return &Pending{cfg: cfg}
}

// Run polls until ctx ends.
func (p *Pending) Run(ctx context.Context) error {
	return loop(ctx, p.cfg.Logger, p.cfg.Interval, p.runOnce)
}

// RunOnce runs one round and returns how many jobs it queued.
func (p *Pending) RunOnce(ctx context.Context) (int, error) {
	n, _, err := p.round(ctx)
	return n, err
}

func (p *Pending) runOnce(ctx context.Context) (bool, error) {
	_, more, err := p.round(ctx)
	return more, err
}

func (p *Pending) round(ctx context.Context) (int, bool, error) {
	now := p.cfg.NowFunc()
	jobs, err := p.cfg.Store.JobListDue(ctx, &dispatch.JobListDueParams{Status: dispatch.StatusPending, Now: now, Limit: p.cfg.BatchSize})
	if err != nil {
		return 0, false, fmt.Errorf("list due pending jobs: %w", err)
	}
	// The moves are independent version-checked writes: run them side by
	// side (the store batches concurrent writes), then send the moved jobs
	// in the listed order, which keeps each group's order.
	moved := make([]bool, len(jobs))
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, pendingWriters)
	var wg sync.WaitGroup
	for i, j := range jobs {
		if err := j.Transition(dispatch.StatusQueued, now); err != nil {
			continue
		}
		ev := j.StatusEvent(p.cfg.NewID(), stream.TypeDispatchQueued, now)
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := p.cfg.Store.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: j, Events: []stream.Event{ev}})
			switch {
			case err == nil:
				moved[i] = true
			case errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound):
				// another instance or the router moved it
			default:
				errs[i] = fmt.Errorf("queue job %s: %w", j.ID, err)
			}
		}()
	}
	wg.Wait()
	var toSend []*dispatch.Job
	queued := 0
	for i, j := range jobs {
		if !moved[i] {
			continue
		}
		queued++
		if j.Delivery != dispatch.DeliveryPull {
			toSend = append(toSend, j)
		}
	}
	if len(toSend) > 0 {
		if failed, err := p.cfg.Enqueuer.Enqueue(ctx, toSend); failed > 0 {
			p.cfg.Logger.WarnContext(ctx, "jobs back to pending after queue send failure", "jobs", failed, "error", err)
		}
	}
	if queued > 0 {
		p.cfg.Logger.DebugContext(ctx, "queued due jobs", "jobs", queued)
	}
	if err := errors.Join(errs...); err != nil {
		return queued, false, err
	}
	return queued, len(jobs) == p.cfg.BatchSize, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func orDefaultInt(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

func orLogger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

func orNow(f func() time.Time) func() time.Time {
	if f == nil {
		return time.Now
	}
	return f
}
