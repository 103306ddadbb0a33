package sqlitestore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/store"
)

const jobColumns = `id, version, secret, doc`

// maxInList is the most values one IN list binds.
const maxInList = 500

// jobDocument is the stored form of a job: its fields with their JSON tags
// but without the API's MarshalJSON, so the storage format does not follow
// changes to the API's rendering.
type jobDocument dispatch.Job

// jobDoc returns the stored document of j: the job in UTC milliseconds.
func jobDoc(j *dispatch.Job) ([]byte, error) {
	c := *j
	c.CreatedAt = msUTC(c.CreatedAt)
	c.UpdatedAt = msUTC(c.UpdatedAt)
	c.NextAttemptAt = msUTCPtr(c.NextAttemptAt)
	c.LeaseExpiresAt = msUTCPtr(c.LeaseExpiresAt)
	c.CompletedAt = msUTCPtr(c.CompletedAt)
	c.RetriedAt = msUTCPtr(c.RetriedAt)
	if c.Attempts != nil {
		c.Attempts = slices.Clone(c.Attempts)
		for i := range c.Attempts {
			c.Attempts[i].StartedAt = msUTC(c.Attempts[i].StartedAt)
		}
	}
	b, err := json.Marshal((*jobDocument)(&c))
	if err != nil {
		return nil, fmt.Errorf("encode job %s: %w", j.ID, err)
	}
	return b, nil
}

// scanJob reads a job with its secrets opened by the store's box.
func (s *Store) scanJob(r rowScanner) (*dispatch.Job, error) {
	j, err := scanJobSealed(r)
	if err != nil {
		return nil, err
	}
	if j, err = j.MapSecrets(s.box.Open); err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	return j, nil
}

// scanJobSealed reads a job as stored, its secrets as they are.
func scanJobSealed(r rowScanner) (*dispatch.Job, error) {
	var (
		id, secret string
		version    int64
		doc        []byte
	)
	if err := r.Scan(&id, &version, &secret, &doc); err != nil {
		return nil, err
	}
	j := &dispatch.Job{}
	if err := json.Unmarshal(doc, (*jobDocument)(j)); err != nil {
		return nil, fmt.Errorf("decode job %s: %w", id, err)
	}
	j.Secret = secret
	j.Version = version
	return j, nil
}

// jobRow is a job encoded for the jobs table, prepared in the caller's
// goroutine so the writer neither encodes nor reads the caller's values.
type jobRow struct {
	id      string
	version int64
	cols    []any // status .. doc, in the column order of insertJob
}

// newJobRow encodes j with its secrets sealed by the store's box.
func (s *Store) newJobRow(j *dispatch.Job) (*jobRow, error) {
	j, err := j.MapSecrets(s.box.Seal)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	doc, err := jobDoc(j)
	if err != nil {
		return nil, err
	}
	return &jobRow{id: j.ID, version: j.Version, cols: []any{
		string(j.Status), nullMillis(j.NextAttemptAt), millis(j.UpdatedAt), nullMillis(j.LeaseExpiresAt),
		millis(j.CreatedAt), j.MessageGroup, j.SubscriptionID, j.Subscription, j.EventID, j.Code, j.OrderKey(),
		string(j.Delivery), j.Secret, doc,
	}}, nil
}

// narrowArgs are the arguments of JobUpdate's narrow UPDATE: the changing
// columns, then id, version and the indexed columns that must be unchanged.
func (r *jobRow) narrowArgs() []any {
	c := r.cols // status, next, updated, lease, created, group, subID, sub, event, code, order, delivery, secret, doc
	return []any{c[0], c[1], c[2], c[3], c[11], c[12], c[13], r.id, r.version, c[4], c[5], c[6], c[7], c[8], c[9], c[10]}
}

func (s *Store) newJobRows(jobs []*dispatch.Job) ([]*jobRow, error) {
	rows := make([]*jobRow, len(jobs))
	for i, j := range jobs {
		r, err := s.newJobRow(j)
		if err != nil {
			return nil, err
		}
		rows[i] = r
	}
	return rows, nil
}

// insertJob stores a job unless its id is stored; it reports whether it did.
func insertJob(ctx context.Context, tx *writeTx, r *jobRow) (bool, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO jobs (id, status, next_attempt_at, updated_at, lease_expires_at,
		created_at, message_group, subscription_id, subscription, event_id, code, order_key, delivery,
		secret, doc, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1) ON CONFLICT (id) DO NOTHING`,
		append([]any{r.id}, r.cols...)...)
	if err != nil {
		return false, fmt.Errorf("insert job %s: %w", r.id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("insert job %s: %w", r.id, err)
	}
	return n == 1, nil
}

// insertJobsWithEvents stores the jobs not yet stored and the status events,
// except those about a job that was already stored. It returns the indexes of
// the jobs it inserted.
func insertJobsWithEvents(ctx context.Context, tx *writeTx, jobs []*jobRow, events []*statusEventRow) ([]int, error) {
	var skip map[string]bool
	inserted := make([]int, 0, len(jobs))
	for i, r := range jobs {
		ok, err := insertJob(ctx, tx, r)
		if err != nil {
			return nil, err
		}
		if !ok {
			if skip == nil {
				skip = make(map[string]bool)
			}
			skip[r.id] = true
			continue
		}
		inserted = append(inserted, i)
	}
	for _, e := range events {
		if skip[e.subject] {
			continue
		}
		if err := insertStatusEvent(ctx, tx, e); err != nil {
			return nil, err
		}
	}
	return inserted, nil
}

// JobInsertMany stores the jobs not yet stored, with the status events of
// those, and sets Version 1 on each job it inserted.
func (s *Store) JobInsertMany(ctx context.Context, p *dispatch.JobInsertManyParams) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	jobs, err := s.newJobRows(p.Jobs)
	if err != nil {
		return fmt.Errorf("insert jobs: %w", err)
	}
	events, err := newStatusEventRows(p.Events)
	if err != nil {
		return fmt.Errorf("insert jobs: %w", err)
	}
	var inserted []int
	err = s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		var err error
		inserted, err = insertJobsWithEvents(ctx, tx, jobs, events)
		return err
	})
	if err != nil {
		return fmt.Errorf("insert jobs: %w", s.translate(err))
	}
	for _, i := range inserted {
		p.Jobs[i].Version = 1
	}
	return nil
}

// JobGetByID returns one job.
func (s *Store) JobGetByID(ctx context.Context, id string) (*dispatch.Job, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	j, err := s.scanJob(s.queryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ?`, id))
	if err != nil {
		return nil, fmt.Errorf("get job %s: %w", id, s.translate(err))
	}
	return j, nil
}

// JobGetMany returns the stored jobs among ids.
func (s *Store) JobGetMany(ctx context.Context, ids []string) ([]*dispatch.Job, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	// Chunks keep each query under SQLite's limit on bound parameters.
	var jobs []*dispatch.Job
	for chunk := range slices.Chunk(ids, maxInList) {
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		got, err := s.queryJobs(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id IN (`+placeholders(len(chunk))+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("get %d jobs: %w", len(ids), err)
		}
		jobs = append(jobs, got...)
	}
	return jobs, nil
}

// JobListByEvent returns the jobs of one event.
func (s *Store) JobListByEvent(ctx context.Context, eventID string) ([]*dispatch.Job, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	jobs, err := s.queryJobs(ctx, `SELECT `+jobColumns+` FROM jobs WHERE event_id = ?`, eventID)
	if err != nil {
		return nil, fmt.Errorf("list jobs of event %s: %w", eventID, err)
	}
	return jobs, nil
}

// JobList returns one page of jobs, highest id first.
func (s *Store) JobList(ctx context.Context, p *dispatch.JobListParams) (*dispatch.JobPage, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var w where
	if p.Status != "" {
		w.add("status = ?", string(p.Status))
	}
	if p.SubscriptionID != "" {
		w.add("subscription_id = ?", p.SubscriptionID)
	}
	if p.SubscriptionIDs != nil {
		ids, err := json.Marshal(p.SubscriptionIDs)
		if err != nil {
			return nil, fmt.Errorf("list jobs: encode subscription ids: %w", err)
		}
		w.add("subscription_id IN (SELECT value FROM json_each(?))", string(ids))
	}
	if p.Subscription != "" {
		w.add("subscription = ?", p.Subscription)
	}
	if p.EventID != "" {
		w.add("event_id = ?", p.EventID)
	}
	if p.EventType != "" {
		w.add("code = ?", p.EventType)
	}
	if p.MessageGroup != "" {
		w.add("message_group = ?", p.MessageGroup)
	}
	if !p.Since.IsZero() {
		w.add("created_at >= ?", millis(p.Since))
	}
	if !p.Until.IsZero() {
		w.add("created_at < ?", millis(p.Until))
	}
	if p.Cursor != "" {
		w.add("id < ?", p.Cursor)
	}
	limit := pageLimit(p.Limit)
	jobs, err := s.queryJobs(ctx, `SELECT `+jobColumns+` FROM jobs`+w.sql()+` ORDER BY id DESC LIMIT ?`,
		append(w.args, limit+1)...)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	page := &dispatch.JobPage{Jobs: jobs}
	if len(jobs) > limit {
		page.Jobs = jobs[:limit]
		page.NextCursor = jobs[limit-1].ID
	}
	return page, nil
}

// JobUpdate writes p.Job when the stored version is p.Job.Version, with its
// status events and its operational outbox rows in the same transaction,
// and then sets p.Job.Version to the new version.
func (s *Store) JobUpdate(ctx context.Context, p *dispatch.JobUpdateParams) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	j := p.Job
	r, err := s.newJobRow(j)
	if err != nil {
		return fmt.Errorf("update job %s: %w", j.ID, err)
	}
	events, err := newStatusEventRows(p.Events)
	if err != nil {
		return fmt.Errorf("update job %s: %w", j.ID, err)
	}
	outbox, err := newStatusEventRows(p.Outbox)
	if err != nil {
		return fmt.Errorf("update job %s: %w", j.ID, err)
	}
	err = s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		// A job's lifecycle changes its status and times, never what the
		// other indexes hold (event, subscription, group, order key,
		// creation). The first UPDATE sets only the columns that change,
		// so SQLite rewrites two of the seven job indexes, not all of them;
		// its WHERE holds it to rows whose other indexed columns are
		// unchanged, and the full UPDATE covers the rest.
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET status = ?, next_attempt_at = ?, updated_at = ?,
			lease_expires_at = ?, delivery = ?, secret = ?, doc = ?, version = version + 1
			WHERE id = ? AND version = ? AND created_at = ? AND message_group = ? AND subscription_id = ?
			AND subscription = ? AND event_id = ? AND code = ? AND order_key = ?`, r.narrowArgs()...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err //nolint:wrapcheck // wrapped below
		}
		if n == 0 {
			res, err = tx.ExecContext(ctx, `UPDATE jobs SET status = ?, next_attempt_at = ?, updated_at = ?,
				lease_expires_at = ?, created_at = ?, message_group = ?, subscription_id = ?, subscription = ?,
				event_id = ?, code = ?, order_key = ?, delivery = ?, secret = ?, doc = ?, version = version + 1
				WHERE id = ? AND version = ?`, append(r.cols, r.id, r.version)...)
			if err != nil {
				return err
			}
			if n, err = res.RowsAffected(); err != nil {
				return err //nolint:wrapcheck // wrapped below
			}
		}
		if n == 0 {
			return missingOr(ctx, tx, "jobs", "id", r.id, fmt.Errorf("%w: stored version is not %d", store.ErrStale, r.version))
		}
		for _, e := range events {
			if err := insertStatusEvent(ctx, tx, e); err != nil {
				return err
			}
		}
		return insertOutbox(ctx, tx, outbox)
	})
	if err != nil {
		return fmt.Errorf("update job %s: %w", j.ID, s.translate(err))
	}
	j.Version++
	return nil
}

// JobListDue returns the due jobs of one status, lowest order key first.
func (s *Store) JobListDue(ctx context.Context, p *dispatch.JobListDueParams) ([]*dispatch.Job, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var w where
	w.add("status = ?", string(p.Status))
	now := millis(p.Now)
	switch p.Status {
	case dispatch.StatusPending:
		w.add("(next_attempt_at IS NULL OR next_attempt_at <= ?)", now)
	case dispatch.StatusQueued:
		w.add("updated_at <= ?", now)
	case dispatch.StatusInProgress:
		w.add("lease_expires_at <= ?", now)
	default:
		// Other statuses are never due.
		return nil, nil
	}
	if p.SubscriptionID != "" {
		w.add("subscription_id = ?", p.SubscriptionID)
	}
	if p.Delivery != "" {
		w.add("delivery = ?", string(p.Delivery))
	}
	jobs, err := s.queryJobs(ctx, `SELECT `+jobColumns+` FROM jobs`+w.sql()+` ORDER BY order_key, id LIMIT ?`,
		append(w.args, limitOr(p.Limit, 100))...)
	if err != nil {
		return nil, fmt.Errorf("list due %s jobs: %w", p.Status, err)
	}
	return jobs, nil
}

// JobListGroup returns jobs of one message group of one subscription in
// ascending order key.
func (s *Store) JobListGroup(ctx context.Context, p *dispatch.JobListGroupParams) ([]*dispatch.Job, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var w where
	w.add("subscription_id = ?", p.SubscriptionID)
	w.add("message_group = ?", p.MessageGroup)
	if p.BeforeOrderKey != "" {
		w.add("order_key < ?", p.BeforeOrderKey)
	}
	if len(p.Statuses) > 0 {
		args := make([]any, len(p.Statuses))
		for i, st := range p.Statuses {
			args[i] = string(st)
		}
		w.add("status IN ("+placeholders(len(args))+")", args...)
	}
	jobs, err := s.queryJobs(ctx, `SELECT `+jobColumns+` FROM jobs`+w.sql()+` ORDER BY order_key, id LIMIT ?`,
		append(w.args, limitOr(p.Limit, 100))...)
	if err != nil {
		return nil, fmt.Errorf("list jobs of group %s: %w", p.MessageGroup, err)
	}
	return jobs, nil
}

// JobDeleteFinishedBefore deletes up to p.Limit finished jobs last updated
// before p.Before.
func (s *Store) JobDeleteFinishedBefore(ctx context.Context, p *dispatch.JobDeleteFinishedBeforeParams) (int, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	var n int64
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM jobs WHERE id IN (SELECT id FROM jobs
			WHERE status IN ('COMPLETED', 'ERROR', 'CANCELLED') AND updated_at < ? ORDER BY updated_at LIMIT ?)`,
			millis(p.Before), limitOr(p.Limit, 1000))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err //nolint:wrapcheck // wrapped below
	})
	if err != nil {
		return 0, fmt.Errorf("delete finished jobs: %w", s.translate(err))
	}
	return int(n), nil
}

// queryJobs runs a query of jobColumns on a reader, opening the jobs'
// secrets.
func (s *Store) queryJobs(ctx context.Context, query string, args ...any) ([]*dispatch.Job, error) {
	jobs, err := s.queryJobsSealed(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	for i, j := range jobs {
		if jobs[i], err = j.MapSecrets(s.box.Open); err != nil {
			return nil, fmt.Errorf("open: %w", err)
		}
	}
	return jobs, nil
}

// limitOr is n, or def when n is not positive.
func limitOr(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}
