package pollers

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
)

// Cleanup defaults.
const (
	// JobRetentionDefault is how long finished jobs are kept.
	JobRetentionDefault = 7 * 24 * time.Hour
	// EventRetentionDefault is how long events are kept.
	EventRetentionDefault = 7 * 24 * time.Hour
	// CleanupIntervalDefault is the period of the cleanup poller.
	CleanupIntervalDefault = time.Minute
	// eventFloorMargin is kept below the oldest event still needed: it
	// covers the gap between an event's id time and its ReceivedAt (two
	// reads of the same clock in one process).
	eventFloorMargin = time.Minute
)

// Kinds reported to CleanupConfig.OnDeleteFunc.
const (
	// CleanupJobs is the deletion of finished jobs.
	CleanupJobs = "jobs"
	// CleanupEvents is the deletion of events.
	CleanupEvents = "events"
)

// CleanupStore is what the cleanup poller needs of the store.
type CleanupStore interface {
	JobDeleteFinishedBefore(ctx context.Context, p *dispatch.JobDeleteFinishedBeforeParams) (int, error)
	JobListDue(ctx context.Context, p *dispatch.JobListDueParams) ([]*dispatch.Job, error)
	EventListNotFannedOut(ctx context.Context, p *event.ListNotFannedOutParams) ([]*event.Event, error)
	EventDeleteBefore(ctx context.Context, before time.Time, limit int) (int, error)
}

// CleanupConfig configures the cleanup poller.
type CleanupConfig struct {
	Store CleanupStore
	// JobRetention is how long a finished job (COMPLETED, ERROR,
	// CANCELLED) is kept after its last change. Default 168 h.
	JobRetention time.Duration
	// EventRetention is how long an event is kept after it was received.
	// Default 168 h.
	EventRetention time.Duration
	// Interval is the period. Default 1 min.
	Interval time.Duration
	// BatchSize bounds one delete. Default 500.
	BatchSize int
	Logger    *slog.Logger
	NowFunc   func() time.Time
	// OnDeleteFunc, when set, is called after each delete that removed
	// records, with the kind (CleanupJobs or CleanupEvents) and how many.
	// For metrics; it must not block.
	OnDeleteFunc func(kind string, deleted int)
}

// Cleanup deletes finished jobs and events past their retention, in
// batches of BatchSize (a full batch is followed by another at once).
//
// An event is deleted only when it is older than both retentions and older
// than every event that still has an unfinished job or is not fanned out
// yet: the router reads a job's event at each delivery, so an event must
// outlive its unfinished jobs. The store's EventDeleteBefore only knows
// times, so the poller computes that floor before each event delete from
// the oldest unfinished job (jobs are listed by order key, which is their
// event's id, a ULID carrying the receive time). Several instances may run
// it at once; each delete is idempotent.
type Cleanup struct {
	cfg CleanupConfig
}

// NewCleanup returns the cleanup poller.
func NewCleanup(cfg CleanupConfig) *Cleanup {
	cfg.JobRetention = orDefault(cfg.JobRetention, JobRetentionDefault)
	cfg.EventRetention = orDefault(cfg.EventRetention, EventRetentionDefault)
	cfg.Interval = orDefault(cfg.Interval, CleanupIntervalDefault)
	cfg.BatchSize = orBatchSize(cfg.BatchSize)
	cfg.Logger = orLogger(cfg.Logger).With("component", "cleanup_poller")
	cfg.NowFunc = orNow(cfg.NowFunc)
	return &Cleanup{cfg: cfg}
}

// Run polls until ctx ends.
func (c *Cleanup) Run(ctx context.Context) error {
	return loop(ctx, c.cfg.Logger, c.cfg.Interval, func(ctx context.Context) (bool, error) {
		jobs, events, err := c.RunOnce(ctx)
		return jobs == c.cfg.BatchSize || events == c.cfg.BatchSize, err
	})
}

// RunOnce deletes one batch of expired finished jobs, then one batch of
// expired events, and returns how many of each it deleted.
func (c *Cleanup) RunOnce(ctx context.Context) (jobs, events int, err error) {
	now := c.cfg.NowFunc()
	jobsBefore := now.Add(-c.cfg.JobRetention)
	jobs, err = c.cfg.Store.JobDeleteFinishedBefore(ctx, &dispatch.JobDeleteFinishedBeforeParams{Before: jobsBefore, Limit: c.cfg.BatchSize})
	if err != nil {
		return 0, 0, fmt.Errorf("delete finished jobs before %s: %w", jobsBefore.Format(time.RFC3339), err)
	}
	c.report(ctx, CleanupJobs, jobs)

	before, err := c.eventsBefore(ctx, now)
	if err != nil {
		return jobs, 0, err
	}
	events, err = c.cfg.Store.EventDeleteBefore(ctx, before, c.cfg.BatchSize)
	if err != nil {
		return jobs, 0, fmt.Errorf("delete events before %s: %w", before.Format(time.RFC3339), err)
	}
	c.report(ctx, CleanupEvents, events)
	return jobs, events, nil
}

func (c *Cleanup) report(ctx context.Context, kind string, n int) {
	if n == 0 {
		return
	}
	c.cfg.Logger.InfoContext(ctx, "deleted expired records", "kind", kind, "deleted", n)
	if c.cfg.OnDeleteFunc != nil {
		c.cfg.OnDeleteFunc(kind, n)
	}
}

// eventsBefore returns the receive time before which events may go: the
// older of both retention cut-offs, lowered below the oldest event not
// fanned out and below the oldest unfinished job's event.
func (c *Cleanup) eventsBefore(ctx context.Context, now time.Time) (time.Time, error) {
	before := now.Add(-max(c.cfg.EventRetention, c.cfg.JobRetention))
	notFanned, err := c.cfg.Store.EventListNotFannedOut(ctx, &event.ListNotFannedOutParams{ReceivedBefore: before, Limit: 1})
	if err != nil {
		return time.Time{}, fmt.Errorf("list events not fanned out: %w", err)
	}
	if len(notFanned) > 0 && notFanned[0].ReceivedAt.Before(before) {
		before = notFanned[0].ReceivedAt
	}
	// Every unfinished job is due at the end of time. Each status is read
	// twice, in opposite orders, so that a job moving between two statuses
	// while they are read is seen at least once.
	end := now.Add(100 * 365 * 24 * time.Hour)
	unfinished := []dispatch.Status{
		dispatch.StatusInProgress, dispatch.StatusQueued, dispatch.StatusPending,
		dispatch.StatusPending, dispatch.StatusQueued, dispatch.StatusInProgress,
	}
	for _, status := range unfinished {
		oldest, err := c.cfg.Store.JobListDue(ctx, &dispatch.JobListDueParams{Status: status, Now: end, Limit: 1})
		if err != nil {
			return time.Time{}, fmt.Errorf("list oldest %s job: %w", status, err)
		}
		if len(oldest) == 0 {
			continue
		}
		at, err := ulidTime(oldest[0].OrderKey())
		if err != nil {
			return time.Time{}, fmt.Errorf("read the time of job %s: %w", oldest[0].ID, err)
		}
		if floor := at.Add(-eventFloorMargin); floor.Before(before) {
			before = floor
		}
	}
	return before, nil
}

// crockford is the ULID alphabet.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// ulidTime returns the millisecond time encoded in the first 10 characters
// of a ULID.
func ulidTime(id string) (time.Time, error) {
	if len(id) != 26 {
		return time.Time{}, fmt.Errorf("id %q is not a ULID", id)
	}
	var ms uint64
	for _, r := range strings.ToUpper(id[:10]) {
		v := strings.IndexRune(crockford, r)
		if v < 0 {
			return time.Time{}, fmt.Errorf("id %q is not a ULID", id)
		}
		ms = ms<<5 | uint64(v)
	}
	return time.UnixMilli(int64(ms)).UTC(), nil
}
