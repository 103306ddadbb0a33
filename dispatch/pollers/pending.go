package pollers

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hooklane/hooklane/dispatch"
)

// PendingIntervalDefault is the pending poller's period.
const PendingIntervalDefault = 5 * time.Second

// Jobs is what the job pollers need of the job lifecycle
// (*dispatch.Lifecycle).
type Jobs interface {
	QueueDue(ctx context.Context, p dispatch.QueueDueParams) (queued, listed int, err error)
	RescueStale(ctx context.Context, p dispatch.RescueParams) (moved, listed int, err error)
	RescueExpired(ctx context.Context, p dispatch.RescueParams) (moved, listed int, err error)
}

// PendingConfig configures the pending poller.
type PendingConfig struct {
	Jobs Jobs
	// Interval is the period. Default 5 s.
	Interval time.Duration
	// BatchSize bounds one round. Default 500.
	BatchSize int
	Logger    *slog.Logger
	// OnQueueFunc, when set, is called after each round that queued jobs,
	// with how many. For metrics; it must not block.
	OnQueueFunc func(queued int)
}

// Pending moves PENDING jobs that are due to QUEUED and sends them, in
// group order (dispatch.Lifecycle.QueueDue). The move is a version-checked
// write, so of several instances exactly one queues a given job in a round.
type Pending struct {
	cfg PendingConfig
}

// NewPending returns the pending poller.
func NewPending(cfg PendingConfig) *Pending {
	cfg.Interval = orDefault(cfg.Interval, PendingIntervalDefault)
	cfg.BatchSize = orBatchSize(cfg.BatchSize)
	cfg.Logger = orLogger(cfg.Logger).With("component", "pending_poller")
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
	queued, listed, err := p.cfg.Jobs.QueueDue(ctx, dispatch.QueueDueParams{Limit: p.cfg.BatchSize})
	if queued > 0 {
		p.cfg.Logger.DebugContext(ctx, "queued due jobs", "jobs", queued)
		if p.cfg.OnQueueFunc != nil {
			p.cfg.OnQueueFunc(queued)
		}
	}
	if err != nil {
		return queued, false, fmt.Errorf("queue due jobs: %w", err)
	}
	// Another round at once only when this one moved jobs: a full list
	// whose moves were all refused (another instance's, or a store's write
	// guards) would otherwise be listed again and again without pause.
	return queued, queued > 0 && listed == p.cfg.BatchSize, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// orBatchSize is n, or BatchSizeDefault when n is not positive.
func orBatchSize(n int) int {
	if n <= 0 {
		return BatchSizeDefault
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
