package api

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/cloudevent"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/stream"
)

// Pull delivery limits (API.md §10).
const (
	// PullMaxClaim is the most jobs one claim hands out.
	PullMaxClaim = 100
	// PullMaxWait is the longest a claim long-polls.
	PullMaxWait = 30 * time.Second
	// LeaseDefault is a pulled job's lease when Config.Lease is zero.
	LeaseDefault = 2 * time.Minute
	// pullPollInterval is how often a long-polling claim re-reads the store.
	// The store is the only source every instance shares (a job may become
	// due through another instance's ingest or the pending poller), so the
	// claim polls it on this short interval, bounded by the wait; when the
	// status stream hub is configured, a dispatch.queued/created event of
	// the subscription wakes it at once.
	pullPollInterval = 50 * time.Millisecond
	// pullScanLimit bounds the due jobs one claim round examines.
	pullScanLimit = 500
	// workerSeenWindow is how long GET /api/workers remembers a worker.
	workerSeenWindow = time.Hour
)

// workerRegistry remembers when each pull worker was last seen by this
// instance.
type workerRegistry struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

func newWorkerRegistry() *workerRegistry {
	return &workerRegistry{seen: map[string]time.Time{}}
}

// touch records activity of worker id at now.
func (r *workerRegistry) touch(id string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.After(r.seen[id]) {
		r.seen[id] = now
	}
}

// since returns the workers seen at or after cutoff, forgetting older ones.
func (r *workerRegistry) since(cutoff time.Time) map[string]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]time.Time, len(r.seen))
	for id, t := range r.seen {
		if t.Before(cutoff) {
			delete(r.seen, id)
			continue
		}
		out[id] = t
	}
	return out
}

func (s *Server) lease() time.Duration { return cmp.Or(s.cfg.Lease, LeaseDefault) }

// dueSignal wakes long-polling claims on this instance the moment it stores
// a pull job that is due (ingest of an event matching a pull
// subscription). Jobs that become due elsewhere (another instance, the
// pending poller) are found by the claim's short store poll instead.
type dueSignal struct {
	mu sync.Mutex
	ch chan struct{}
}

// wait returns a channel closed at the next broadcast. Take it before
// reading the store, so a broadcast between the read and the wait is not
// missed.
func (d *dueSignal) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ch == nil {
		d.ch = make(chan struct{})
	}
	return d.ch
}

// broadcast wakes every claim waiting now.
func (d *dueSignal) broadcast() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ch != nil {
		close(d.ch)
		d.ch = nil
	}
}

// claimParams are the parsed query parameters of a claim.
type claimParams struct {
	worker string
	max    int
	wait   time.Duration
	tags   []string
}

func parseClaimParams(c *gin.Context) (*claimParams, error) {
	p := &claimParams{worker: strings.TrimSpace(c.Query("worker_id")), max: 1}
	if p.worker == "" {
		return nil, badRequest("worker_id is required")
	}
	if v := c.Query("max"); v != "" {
		n, ok := parseCount(v, PullMaxClaim)
		switch {
		case !ok:
			return nil, badRequest("max must be a positive integer")
		case n < 1:
			// A well-formed number out of range (API.md conventions: 422).
			return nil, unprocessable("max must be a positive integer")
		}
		p.max = n
	}
	if v := c.Query("wait"); v != "" {
		d, err := parseWait(v)
		if err != nil {
			return nil, err
		}
		p.wait = min(d, PullMaxWait)
	}
	for t := range strings.SplitSeq(c.Query("tags"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			p.tags = append(p.tags, t)
		}
	}
	return p, nil
}

// parseWait reads a Go duration ("20s") or a number of seconds ("20").
func parseWait(v string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(f) {
		if f < 0 {
			return 0, unprocessable("wait must not be negative")
		}
		return time.Duration(min(f, PullMaxWait.Seconds()) * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return 0, badRequest("wait must be a duration such as 20s, or a number of seconds")
	case d < 0:
		return 0, unprocessable("wait must not be negative")
	}
	return d, nil
}

// claimJobs is GET /api/subscriptions/{id}/jobs/next.
func (s *Server) claimJobs(c *gin.Context) error {
	p, err := parseClaimParams(c)
	if err != nil {
		return err
	}
	ctx := c.Request.Context()
	sub, err := s.cfg.Store.SubscriptionGetByID(ctx, c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "subscription")
	}
	if sub.Delivery != dispatch.DeliveryPull {
		return badRequest("the subscription does not use pull delivery")
	}
	s.workers.touch(p.worker, s.now())
	deadline := time.Now().Add(p.wait)

	var wake <-chan *stream.Event
	if hub := s.cfg.Stream.Hub; hub != nil && p.wait > 0 {
		ch, cancel := hub.Subscribe(func(e *stream.Event) bool {
			return e.Data.Subscription == sub.Code &&
				(e.Type == stream.TypeDispatchQueued || e.Type == stream.TypeDispatchCreated || e.Type == stream.TypeDispatchCompleted)
		})
		defer cancel()
		wake = ch
	}
	var ticker *time.Ticker
	for {
		due := s.pullDue.wait()
		items, err := s.claimRound(ctx, sub.ID, p)
		if err != nil {
			return err
		}
		if len(items) > 0 {
			return writeClaimed(c, items)
		}
		left := time.Until(deadline)
		if left <= 0 {
			c.Status(http.StatusNoContent)
			return nil
		}
		if ticker == nil {
			ticker = time.NewTicker(pullPollInterval)
			defer ticker.Stop()
		}
		timer := time.NewTimer(left)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil //nolint:nilerr // the worker went away; nothing to answer
		case _, ok := <-wake:
			if !ok {
				wake = nil // hub dropped us: fall back to polling
			}
		case <-due:
		case <-ticker.C:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// claimed is one claimed job with its event.
type claimed struct {
	job   *dispatch.Job
	event *cloudevent.Event
}

func writeClaimed(c *gin.Context, items []claimed) error {
	out := make([]json.RawMessage, 0, len(items))
	for _, it := range items {
		b, err := json.Marshal(jobForCaller(c, it.job))
		if err != nil {
			return fmt.Errorf("encode job: %w", err)
		}
		if it.event != nil {
			ev, err := json.Marshal(it.event)
			if err != nil {
				return fmt.Errorf("encode event: %w", err)
			}
			b = append(append(append(b[:len(b)-1], `,"event":`...), ev...), '}')
		}
		out = append(out, b)
	}
	c.JSON(http.StatusOK, gin.H{"items": out})
	return nil
}

// claimRound claims up to p.max due jobs of one subscription: oldest first,
// within an ordered message group only its head and only when none of the
// group is in flight. Each claim is a version-checked update, so of two
// racing workers exactly one gets a job.
func (s *Server) claimRound(ctx context.Context, subID string, p *claimParams) ([]claimed, error) {
	due, err := s.cfg.Store.JobListDue(ctx, &dispatch.JobListDueParams{
		Status: dispatch.StatusQueued, Now: s.now(), Limit: pullScanLimit,
		SubscriptionID: subID, Delivery: dispatch.DeliveryPull,
	})
	if err != nil {
		return nil, fmt.Errorf("list due pull jobs: %w", err)
	}
	events := map[string]*cloudevent.Event{}
	decided := map[string]bool{}
	var out []claimed
	for _, j := range due {
		if len(out) >= p.max {
			break
		}
		ev, err := s.jobEvent(ctx, j, events)
		if err != nil {
			return nil, err
		}
		if len(p.tags) > 0 && !matchTags(j, ev, p.tags) {
			continue
		}
		if j.Mode.Ordered() && j.MessageGroup != "" {
			if decided[j.MessageGroup] {
				continue // one job per group and claim; the rest wait their turn
			}
			decided[j.MessageGroup] = true
			head, err := s.groupHead(ctx, j)
			if err != nil {
				return nil, err
			}
			if !head {
				continue
			}
		}
		ok, err := s.claimOne(ctx, j, p.worker)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, claimed{job: j, event: ev})
		}
	}
	return out, nil
}

// jobEvent returns the event of an EVENT job (nil for a TASK job), cached
// in seen.
func (s *Server) jobEvent(ctx context.Context, j *dispatch.Job, seen map[string]*cloudevent.Event) (*cloudevent.Event, error) {
	if j.EventID == "" {
		return nil, nil
	}
	if ev, ok := seen[j.EventID]; ok {
		return ev, nil
	}
	se, err := s.cfg.Store.EventGetByID(ctx, j.EventID)
	if err != nil {
		return nil, fmt.Errorf("get event of job %s: %w", j.ID, err)
	}
	seen[j.EventID] = &se.Event
	return &se.Event, nil
}

// matchTags reports whether the job's event type, or any extension value of
// its event, equals one of tags.
func matchTags(j *dispatch.Job, ev *cloudevent.Event, tags []string) bool {
	if slices.Contains(tags, j.Code) {
		return true
	}
	if ev == nil {
		return false
	}
	if slices.Contains(tags, ev.Type) {
		return true
	}
	for _, v := range ev.Extensions {
		if slices.Contains(tags, fmt.Sprint(v)) {
			return true
		}
	}
	return false
}

// groupHead reports whether j may be claimed under its ordering mode: no
// job of its group is in flight, and no earlier job stands before it
// (NEXT_ON_ERROR: an earlier job not yet attempted; BLOCK_ON_ERROR: an
// earlier job not COMPLETED or CANCELLED).
func (s *Server) groupHead(ctx context.Context, j *dispatch.Job) (bool, error) {
	inFlight, err := s.cfg.Store.JobListGroup(ctx, &dispatch.JobListGroupParams{
		SubscriptionID: j.SubscriptionID, MessageGroup: j.MessageGroup,
		Statuses: []dispatch.Status{dispatch.StatusInProgress}, Limit: 1,
	})
	if err != nil {
		return false, fmt.Errorf("list group in flight: %w", err)
	}
	if len(inFlight) > 0 {
		return false, nil
	}
	statuses := []dispatch.Status{dispatch.StatusPending, dispatch.StatusQueued}
	if j.Mode == dispatch.ModeBlockOnError {
		statuses = append(statuses, dispatch.StatusError)
	}
	earlier, err := s.cfg.Store.JobListGroup(ctx, &dispatch.JobListGroupParams{
		SubscriptionID: j.SubscriptionID, MessageGroup: j.MessageGroup, BeforeOrderKey: j.OrderKey(),
		Statuses: statuses, Limit: pullScanLimit,
	})
	if err != nil {
		return false, fmt.Errorf("list group before job: %w", err)
	}
	for _, e := range earlier {
		if j.Mode == dispatch.ModeBlockOnError || e.AttemptCount == 0 {
			return false, nil
		}
	}
	return true, nil
}

// claimOne moves a QUEUED job to IN_PROGRESS for worker, with a lease and a
// PICKED audit entry. It reports false when another writer got there first
// (or the job's max age passed: it is discarded instead).
func (s *Server) claimOne(ctx context.Context, j *dispatch.Job, worker string) (bool, error) {
	now := s.now()
	if j.Expired(now) {
		msg := "max age passed before a worker claimed the job"
		j.LastError = &msg
		if err := j.Transition(dispatch.StatusError, now); err != nil {
			return false, nil //nolint:nilerr // moved on meanwhile
		}
		ev := j.StatusEvent(s.cfg.IDs.New(), stream.TypeDispatchDiscarded, now)
		ev.Data.Error = msg
		if err := s.cfg.Store.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: j, Events: []stream.Event{ev}}); err != nil && !isConflict(err) {
			return false, fmt.Errorf("discard expired job: %w", err)
		}
		return false, nil
	}
	if err := j.Transition(dispatch.StatusInProgress, now); err != nil {
		return false, nil //nolint:nilerr // not claimable
	}
	j.AttemptCount++
	j.Worker = worker
	lease := now.Add(s.lease())
	j.LeaseExpiresAt = &lease
	j.Attempts = append(j.Attempts, dispatch.Attempt{
		Attempt: j.AttemptCount, Action: dispatch.ActionPicked, StartedAt: now, Worker: worker,
	})
	ev := j.StatusEvent(s.cfg.IDs.New(), stream.TypeDispatchStarted, now)
	if err := s.cfg.Store.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: j, Events: []stream.Event{ev}}); err != nil {
		if isConflict(err) {
			return false, nil
		}
		return false, fmt.Errorf("claim job: %w", err)
	}
	return true, nil
}

// reportInput is the body of /complete, /fail and /heartbeat.
type reportInput struct {
	WorkerID        string `json:"workerId"`
	ExecutionTimeMs int64  `json:"executionTimeMs"`
	StatusCode      int    `json:"statusCode"`
	ErrorMessage    string `json:"errorMessage"`
}

func readReport(c *gin.Context) (*reportInput, error) {
	var in reportInput
	if err := decodeJSON(c.Request, &in, adminBodyLimit); err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.WorkerID) == "" {
		return nil, badRequest("workerId is required", FieldError{Pointer: "/workerId", Message: "is required"})
	}
	if in.ExecutionTimeMs < 0 {
		return nil, badRequest("executionTimeMs must not be negative", FieldError{Pointer: "/executionTimeMs", Message: "must not be negative"})
	}
	return &in, nil
}

// finishFunc applies a worker's report to a job it holds and returns the
// status events to store with it.
type finishFunc func(j *dispatch.Job, now time.Time) []stream.Event

// reportJob applies fn to the job when in.WorkerID holds it, retrying on a
// concurrent write. A job no longer IN_PROGRESS whose last audit entry is
// `action` by the same worker is a repeat: it is answered as is (repeat
// true). Anything else is 409.
func (s *Server) reportJob(c *gin.Context, in *reportInput, action string, fn finishFunc) (*dispatch.Job, bool, error) {
	ctx := c.Request.Context()
	s.workers.touch(in.WorkerID, s.now())
	for range 5 {
		j, err := s.cfg.Store.JobGetByID(ctx, c.Param("id"))
		if err != nil {
			return nil, false, s.notFoundOr(err, "dispatch job")
		}
		if j.Status != dispatch.StatusInProgress {
			if n := len(j.Attempts); n > 0 && j.Attempts[n-1].Action == action && j.Attempts[n-1].Worker == in.WorkerID {
				return j, true, nil
			}
			return nil, false, conflict(fmt.Sprintf("the job is %s, not IN_PROGRESS", j.Status))
		}
		if j.Worker != in.WorkerID {
			return nil, false, conflict("the job is held by another worker")
		}
		events := fn(j, s.now())
		err = s.cfg.Store.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: j, Events: events})
		if err == nil {
			return j, false, nil
		}
		if !isConflict(err) {
			return nil, false, fmt.Errorf("update job: %w", err)
		}
	}
	return nil, false, conflict("the job changed concurrently; retry")
}

// workerAttempt is the audit entry of a worker's report.
func workerAttempt(j *dispatch.Job, in *reportInput, action string, now time.Time) dispatch.Attempt {
	d := time.Duration(in.ExecutionTimeMs) * time.Millisecond
	return dispatch.Attempt{
		Attempt: j.AttemptCount, Action: action, StartedAt: now.Add(-d), DurationMs: in.ExecutionTimeMs,
		StatusCode: in.StatusCode, Error: in.ErrorMessage, Worker: in.WorkerID,
	}
}

// completeJob is POST /api/dispatch-jobs/{id}/complete.
func (s *Server) completeJob(c *gin.Context) error {
	in, err := readReport(c)
	if err != nil {
		return err
	}
	in.ErrorMessage = ""
	j, repeat, err := s.reportJob(c, in, dispatch.ActionCompleted, func(j *dispatch.Job, now time.Time) []stream.Event {
		j.Attempts = append(j.Attempts, workerAttempt(j, in, dispatch.ActionCompleted, now))
		j.LastError = nil
		_ = j.Transition(dispatch.StatusCompleted, now)
		ev := j.StatusEvent(s.cfg.IDs.New(), stream.TypeDispatchCompleted, now)
		ev.Data.StatusCode, ev.Data.DurationMs = in.StatusCode, in.ExecutionTimeMs
		return []stream.Event{ev}
	})
	if err != nil {
		return err
	}
	if !repeat {
		s.releaseGroup(c, j)
	}
	c.JSON(http.StatusOK, jobForCaller(c, j))
	return nil
}

// failJob is POST /api/dispatch-jobs/{id}/fail: the retry policy of push
// delivery (router outcome) applies — a retry after the backoff while
// attempts and max age allow, else ERROR.
func (s *Server) failJob(c *gin.Context) error {
	in, err := readReport(c)
	if err != nil {
		return err
	}
	if in.ErrorMessage == "" {
		in.ErrorMessage = "failed"
	}
	j, _, err := s.reportJob(c, in, dispatch.ActionFailed, func(j *dispatch.Job, now time.Time) []stream.Event {
		j.Attempts = append(j.Attempts, workerAttempt(j, in, dispatch.ActionFailed, now))
		msg := in.ErrorMessage
		j.LastError = &msg
		attempt := j.AttemptCount
		ev := func(typ string) stream.Event {
			e := j.StatusEvent(s.cfg.IDs.New(), typ, now)
			e.Data.StatusCode, e.Data.DurationMs, e.Data.Error, e.Data.Attempt = in.StatusCode, in.ExecutionTimeMs, msg, attempt
			return e
		}
		if j.AttemptCount < j.MaxAttempts {
			due := now.Add(j.Retry.Backoff(j.AttemptCount, 0, nil)).UTC().Truncate(time.Millisecond)
			if j.MaxAgeSeconds <= 0 || !due.After(j.AgeDeadline()) {
				_ = j.Transition(dispatch.StatusPending, now)
				j.NextAttemptAt = &due
				return []stream.Event{ev(stream.TypeDispatchFailed)}
			}
		}
		failed := ev(stream.TypeDispatchFailed)
		_ = j.Transition(dispatch.StatusError, now)
		return []stream.Event{failed, ev(stream.TypeDispatchDiscarded)}
	})
	if err != nil {
		return err
	}
	out := gin.H{"retryScheduled": j.Status != dispatch.StatusError, "job": jobForCaller(c, j)}
	if j.NextAttemptAt != nil {
		out["nextAttemptAt"] = formatTime(*j.NextAttemptAt)
	}
	c.JSON(http.StatusOK, out)
	return nil
}

// heartbeatJob is POST /api/dispatch-jobs/{id}/heartbeat.
func (s *Server) heartbeatJob(c *gin.Context) error {
	var in reportInput
	if err := decodeJSON(c.Request, &in, adminBodyLimit); err != nil {
		return err
	}
	if strings.TrimSpace(in.WorkerID) == "" {
		return badRequest("workerId is required", FieldError{Pointer: "/workerId", Message: "is required"})
	}
	ctx := c.Request.Context()
	s.workers.touch(in.WorkerID, s.now())
	for range 5 {
		j, err := s.cfg.Store.JobGetByID(ctx, c.Param("id"))
		if err != nil {
			return s.notFoundOr(err, "dispatch job")
		}
		if j.Status != dispatch.StatusInProgress || j.Worker != in.WorkerID {
			return conflict("the job is not held by this worker")
		}
		now := s.now()
		lease := now.Add(s.lease())
		j.LeaseExpiresAt = &lease
		j.Touch(now)
		err = s.cfg.Store.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: j})
		if err == nil {
			c.JSON(http.StatusOK, gin.H{"leaseExpiresAt": formatTime(lease)})
			return nil
		}
		if !isConflict(err) {
			return fmt.Errorf("extend lease: %w", err)
		}
	}
	return conflict("the job changed concurrently; retry")
}

// workerView is one item of GET /api/workers.
type workerView struct {
	WorkerID   string   `json:"workerId"`
	InFlight   []string `json:"inFlight"`
	LastSeenAt string   `json:"lastSeenAt"`
}

// listWorkers is GET /api/workers: the workers this instance saw in the
// last hour, and every worker holding a pull job, with their in-flight ids.
func (s *Server) listWorkers(c *gin.Context) error {
	limit, cursor, err := listParams(c)
	if err != nil {
		return err
	}
	ctx := c.Request.Context()
	now := s.now()
	seen := s.workers.since(now.Add(-workerSeenWindow))
	inFlight := map[string][]string{}
	p := &dispatch.JobListParams{Status: dispatch.StatusInProgress, Limit: limitMax}
	for {
		pg, err := s.cfg.Store.JobList(ctx, p)
		if err != nil {
			return fmt.Errorf("list jobs in flight: %w", err)
		}
		for _, j := range pg.Jobs {
			if j.Delivery != dispatch.DeliveryPull || j.Worker == "" {
				continue
			}
			inFlight[j.Worker] = append(inFlight[j.Worker], j.ID)
			for _, a := range j.Attempts {
				if a.Worker == j.Worker && a.StartedAt.After(seen[j.Worker]) {
					seen[j.Worker] = a.StartedAt
				}
			}
		}
		if pg.NextCursor == "" {
			break
		}
		p.Cursor = pg.NextCursor
	}
	items := make([]workerView, 0, len(seen))
	for id, t := range seen {
		ids := inFlight[id]
		if ids == nil {
			ids = []string{}
		}
		slices.Sort(ids)
		items = append(items, workerView{WorkerID: id, InFlight: ids, LastSeenAt: formatTime(t)})
	}
	// Sorted by worker id, so a worker keeps its place between polls.
	items, next := pageSorted(items, func(w workerView) string { return w.WorkerID }, false, limit, cursor)
	writePage(c, items, next)
	return nil
}
