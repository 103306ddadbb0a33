package pebblestore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/subscription/replay"
)

// The first byte of a job's value is its encoding version: the header
// (the fields the indexes and list filters read) is the same in both, the
// job itself differs. Format 1 (a JSON document) is read, never written:
// a job stored by an earlier version moves to format 2 with its next
// update.
const (
	// jobFormatJSON: the job as a JSON document (jobDocument).
	jobFormatJSON = 1
	// jobFormatBinary: the job in dispatch's binary form (AppendJobBinary),
	// written from session 13 on.
	jobFormatBinary = 2
)

// jobDocument is the format-1 form of a job: its fields with their JSON
// tags but without the API's MarshalJSON (sqlitestore's document, the
// same bytes).
type jobDocument dispatch.Job

// jobRecord is a job as stored: the fields its indexes and the list
// filters read, its signing secret, then the job in its format.
type jobRecord struct {
	id, status, orderKey, subscriptionID, subscription string
	eventID, code, group, delivery, secret             string
	version, createdAt, updatedAt, nextAt, leaseAt     int64
	format                                             byte
	doc                                                []byte
}

// newJobRecord encodes j, its secrets sealed by the store's box, at the
// given version.
func (s *Store) newJobRecord(j *dispatch.Job, version int64) (*jobRecord, error) {
	j, err := j.MapSecrets(s.box.Seal)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return encodeJob(j, version)
}

// encodeJob encodes j as it is (secrets as they are).
func encodeJob(j *dispatch.Job, version int64) (*jobRecord, error) {
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
	// The header holds the secret and the version.
	c.Secret, c.Version = "", 0
	doc := dispatch.AppendJobBinary(make([]byte, 0, 512), &c)
	return &jobRecord{
		id: j.ID, status: string(j.Status), orderKey: j.OrderKey(), subscriptionID: j.SubscriptionID,
		subscription: j.Subscription, eventID: j.EventID, code: j.Code, group: j.MessageGroup,
		delivery: string(j.Delivery), secret: j.Secret, version: version,
		createdAt: j.CreatedAt.UnixMilli(), updatedAt: j.UpdatedAt.UnixMilli(),
		nextAt: millisOr(j.NextAttemptAt, noTime), leaseAt: millisOr(j.LeaseExpiresAt, noTime),
		format: jobFormatBinary, doc: doc,
	}, nil
}

func (s *Store) newJobRecords(jobs []*dispatch.Job, version int64) ([]*jobRecord, error) {
	out := make([]*jobRecord, len(jobs))
	for i, j := range jobs {
		r, err := s.newJobRecord(j, version)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

func (r *jobRecord) value() []byte {
	e := newEnc(append(make([]byte, 0, 160+len(r.doc)), r.format))
	e.i64(r.version)
	e.str(r.status)
	e.str(r.orderKey)
	e.str(r.subscriptionID)
	e.str(r.subscription)
	e.str(r.eventID)
	e.str(r.code)
	e.str(r.group)
	e.str(r.delivery)
	e.i64(r.createdAt)
	e.i64(r.updatedAt)
	e.i64(r.nextAt)
	e.i64(r.leaseAt)
	e.str(r.secret)
	e.bytes(r.doc)
	return e.B
}

// parseJobRecord decodes a job's value; doc aliases v.
func parseJobRecord(id string, v []byte) (*jobRecord, error) {
	if len(v) == 0 || (v[0] != jobFormatJSON && v[0] != jobFormatBinary) {
		return nil, fmt.Errorf("decode job %s: %w", id, errCorrupt)
	}
	d := newDec(v[1:])
	r := &jobRecord{id: id, format: v[0]}
	r.version = d.i64()
	r.status = d.str()
	r.orderKey = d.str()
	r.subscriptionID = d.str()
	r.subscription = d.str()
	r.eventID = d.str()
	r.code = d.str()
	r.group = d.str()
	r.delivery = d.str()
	r.createdAt = d.i64()
	r.updatedAt = d.i64()
	r.nextAt = d.i64()
	r.leaseAt = d.i64()
	r.secret = d.str()
	r.doc = d.raw()
	if err := d.fault(); err != nil {
		return nil, fmt.Errorf("decode job %s: %w", id, err)
	}
	return r, nil
}

// jobSealed decodes the record into a job, its secrets as stored.
func (r *jobRecord) jobSealed() (*dispatch.Job, error) {
	var j *dispatch.Job
	if r.format == jobFormatBinary {
		var err error
		if j, err = dispatch.ParseJobBinary(r.doc); err != nil {
			return nil, fmt.Errorf("decode job %s: %w", r.id, err)
		}
	} else {
		j = &dispatch.Job{}
		if err := json.Unmarshal(r.doc, (*jobDocument)(j)); err != nil {
			return nil, fmt.Errorf("decode job %s: %w", r.id, err)
		}
	}
	j.Secret = r.secret
	j.Version = r.version
	return j, nil
}

// job decodes the record into a job with its secrets opened.
func (s *Store) job(r *jobRecord) (*dispatch.Job, error) {
	j, err := r.jobSealed()
	if err != nil {
		return nil, err
	}
	if j, err = j.MapSecrets(s.box.Open); err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	return j, nil
}

// due is when a poller finds the job due in its status: a PENDING job
// without a next attempt always, an IN_PROGRESS one without a lease never.
func (r *jobRecord) due() int64 {
	switch dispatch.Status(r.status) {
	case dispatch.StatusPending:
		if r.nextAt == noTime {
			return math.MinInt64
		}
		return r.nextAt
	case dispatch.StatusInProgress:
		if r.leaseAt == noTime {
			return math.MaxInt64
		}
		return r.leaseAt
	default:
		return r.updatedAt
	}
}

// unfinished reports whether the job still waits for a delivery.
func (r *jobRecord) unfinished() bool {
	return slices.Contains([]dispatch.Status{dispatch.StatusPending, dispatch.StatusQueued, dispatch.StatusInProgress}, dispatch.Status(r.status))
}

// entry is one key of a record or index with its value.
type entry struct{ k, v []byte }

// indexEntries are the index keys of the job.
func (r *jobRecord) indexEntries() []entry {
	due := enc{}
	due.i64(r.due())
	due.str(r.delivery)
	due.str(r.subscriptionID)
	out := []entry{
		{key(pfxJobStatus, r.status, r.orderKey, r.id), due.B},
		{key(pfxJobGroup, r.subscriptionID, r.group, r.orderKey, r.id), []byte(r.status)},
		{key(pfxJobEvent, r.eventID, r.id), nil},
	}
	if dispatch.Status(r.status).Finished() {
		out = append(out, entry{key(pfxJobFinished, r.updatedAt, r.id), nil})
	}
	if r.unfinished() {
		out = append(out, entry{key(pfxJobOpen, r.subscriptionID, r.id), nil})
	}
	return out
}

// putJob writes the job and its index entries; old is the stored record
// it replaces (nil for a new job), whose entries that changed it deletes.
func putJob(tx *writeTx, r, old *jobRecord) error {
	if err := tx.set(key(pfxJob, r.id), r.value()); err != nil {
		return err
	}
	entries := r.indexEntries()
	var stored map[string][]byte
	if old != nil {
		keep := make(map[string]bool, len(entries))
		for _, e := range entries {
			keep[string(e.k)] = true
		}
		stored = make(map[string][]byte, len(entries))
		for _, e := range old.indexEntries() {
			if !keep[string(e.k)] {
				if err := tx.del(e.k); err != nil {
					return err
				}
				continue
			}
			stored[string(e.k)] = e.v
		}
	}
	for _, e := range entries {
		if v, ok := stored[string(e.k)]; ok && bytes.Equal(v, e.v) {
			continue // unchanged: the job's event, its unfinished mark
		}
		if err := tx.set(e.k, e.v); err != nil {
			return err
		}
	}
	return nil
}

// deleteJob deletes the job and its index entries.
func deleteJob(tx *writeTx, r *jobRecord) error {
	if err := tx.del(key(pfxJob, r.id)); err != nil {
		return err
	}
	for _, e := range r.indexEntries() {
		if err := tx.del(e.k); err != nil {
			return err
		}
	}
	return nil
}

// insertJobs stores the jobs not yet stored and the status events, except
// those about a job that was already stored. It returns the indexes of the
// jobs it inserted. It writes nothing before it has checked every job.
//
// The status events of a job it inserts are new with the job, and are
// written without looking their ids up; so are all of them when guarded
// (an ingest, whose event's dedup key was not stored). The ids of the
// others (about no job of the batch) are looked up, and stored ones
// skipped.
func insertJobs(tx *writeTx, jobs []*jobRecord, events []*statusRecord, guarded bool) ([]int, error) {
	var skip map[string]bool
	inserted := make([]int, 0, len(jobs))
	seen := make(map[string]bool, len(jobs))
	for i, r := range jobs {
		ok, err := tx.has(key(pfxJob, r.id))
		if err != nil {
			return nil, err
		}
		if ok || seen[r.id] {
			if skip == nil {
				skip = make(map[string]bool)
			}
			if ok {
				skip[r.id] = true
			}
			continue
		}
		seen[r.id] = true
		inserted = append(inserted, i)
	}
	keep := make([]*statusRecord, 0, len(events))
	var unguarded []*statusRecord
	for _, e := range events {
		switch {
		case skip[e.subject]:
		case guarded || seen[e.subject]:
			keep = append(keep, e)
		default:
			unguarded = append(unguarded, e)
		}
	}
	fresh := uniqueStatus(keep)
	if len(unguarded) > 0 {
		others, err := freshStatus(tx, unguarded)
		if err != nil {
			return nil, err
		}
		fresh = uniqueStatus(append(fresh, others...))
	}
	for _, i := range inserted {
		if err := putJob(tx, jobs[i], nil); err != nil {
			return nil, err
		}
	}
	for _, e := range fresh {
		if err := putStatus(tx, e); err != nil {
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
	jobs, err := s.newJobRecords(p.Jobs, 1)
	if err != nil {
		return fmt.Errorf("insert jobs: %w", err)
	}
	events := newStatusRecords(p.Events)
	var inserted []int
	err = s.write(ctx, func(tx *writeTx) error {
		var err error
		inserted, err = insertJobs(tx, jobs, events, false)
		return err
	})
	if err != nil {
		return fmt.Errorf("insert jobs: %w", err)
	}
	for _, i := range inserted {
		p.Jobs[i].Version = 1
	}
	return nil
}

// getJobRecord reads one job's record; nil when it is missing.
func getJobRecord(r pebble.Reader, id string) (*jobRecord, error) {
	v, err := get(r, key(pfxJob, id))
	if err != nil || v == nil {
		return nil, err
	}
	return parseJobRecord(id, v)
}

// JobGetByID returns one job.
func (s *Store) JobGetByID(_ context.Context, id string) (*dispatch.Job, error) {
	var j *dispatch.Job
	err := s.read(func(db *pebble.DB) error {
		r, err := getJobRecord(db, id)
		if err != nil {
			return err
		}
		if r == nil {
			return store.ErrNotFound
		}
		j, err = s.job(r)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get job %s: %w", id, err)
	}
	return j, nil
}

// JobFormat returns the encoding version of a job's stored value
// (jobFormatJSON 1, jobFormatBinary 2), 0 when the job is not stored: for
// the upgrade's tests and diagnostics.
func (s *Store) JobFormat(_ context.Context, id string) (int, error) {
	format := 0
	err := s.read(func(db *pebble.DB) error {
		r, err := getJobRecord(db, id)
		if r != nil {
			format = int(r.format)
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("get job %s: %w", id, err)
	}
	return format, nil
}

// jobsAt reads the jobs with the given ids that exist, in the ids' order.
func (s *Store) jobsAt(r pebble.Reader, ids []string) ([]*dispatch.Job, error) {
	var jobs []*dispatch.Job
	for _, id := range ids {
		rec, err := getJobRecord(r, id)
		if err != nil {
			return nil, err
		}
		if rec == nil {
			continue
		}
		j, err := s.job(rec)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// JobGetMany returns the stored jobs among ids.
func (s *Store) JobGetMany(_ context.Context, ids []string) ([]*dispatch.Job, error) {
	var jobs []*dispatch.Job
	err := s.read(func(db *pebble.DB) error {
		var err error
		jobs, err = s.jobsAt(db, ids)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get %d jobs: %w", len(ids), err)
	}
	return jobs, nil
}

// JobListByEvent returns the jobs of one event.
func (s *Store) JobListByEvent(_ context.Context, eventID string) ([]*dispatch.Job, error) {
	var jobs []*dispatch.Job
	err := s.read(func(db *pebble.DB) error {
		prefix := append(key(pfxJobEvent, eventID), 0)
		var ids []string
		if err := scan(db, prefix, prefixEnd(prefix), false, func(k, _ []byte) (bool, error) {
			ids = append(ids, string(k[len(prefix):]))
			return true, nil
		}); err != nil {
			return err
		}
		var err error
		jobs, err = s.jobsAt(db, ids)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list jobs of event %s: %w", eventID, err)
	}
	return jobs, nil
}

// matches reports whether r passes the list's filters.
func (r *jobRecord) matches(p *dispatch.JobListParams) bool {
	switch {
	case p.Status != "" && r.status != string(p.Status),
		p.SubscriptionID != "" && r.subscriptionID != p.SubscriptionID,
		p.SubscriptionIDs != nil && !slices.Contains(p.SubscriptionIDs, r.subscriptionID),
		p.Subscription != "" && r.subscription != p.Subscription,
		p.EventID != "" && r.eventID != p.EventID,
		p.EventType != "" && r.code != p.EventType,
		p.MessageGroup != "" && r.group != p.MessageGroup,
		!p.Since.IsZero() && r.createdAt < p.Since.UnixMilli(),
		!p.Until.IsZero() && r.createdAt >= p.Until.UnixMilli():
		return false
	}
	return true
}

// JobList returns one page of jobs, highest id first: a walk of the jobs
// in descending id, filtered on their headers (their documents decoded
// only for the page); with an event filter, a walk of that event's jobs.
func (s *Store) JobList(_ context.Context, p *dispatch.JobListParams) (*dispatch.JobPage, error) {
	limit := pageLimit(p.Limit)
	var recs []*jobRecord
	err := s.read(func(db *pebble.DB) error {
		if p.EventID != "" {
			return listJobsOfEvent(db, p, limit, &recs)
		}
		upper := []byte{pfxJob + 1}
		if p.Cursor != "" {
			upper = key(pfxJob, p.Cursor)
		}
		return scan(db, []byte{pfxJob}, upper, true, func(k, v []byte) (bool, error) {
			r, err := parseJobRecord(string(k[1:]), v)
			if err != nil {
				return false, err
			}
			if r.matches(p) {
				r.doc = append([]byte(nil), r.doc...)
				recs = append(recs, r)
			}
			return len(recs) <= limit, nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	page := &dispatch.JobPage{}
	for i, r := range recs {
		if i == limit {
			page.NextCursor = recs[limit-1].id
			break
		}
		j, err := s.job(r)
		if err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		page.Jobs = append(page.Jobs, j)
	}
	return page, nil
}

func listJobsOfEvent(db *pebble.DB, p *dispatch.JobListParams, limit int, recs *[]*jobRecord) error {
	prefix := append(key(pfxJobEvent, p.EventID), 0)
	upper := prefixEnd(prefix)
	if p.Cursor != "" {
		upper = key(pfxJobEvent, p.EventID, p.Cursor)
	}
	return scan(db, prefix, upper, true, func(k, _ []byte) (bool, error) {
		r, err := getJobRecord(db, string(k[len(prefix):]))
		if err != nil || r == nil {
			return err == nil, err
		}
		if r.matches(p) {
			*recs = append(*recs, r)
		}
		return len(*recs) <= limit, nil
	})
}

// JobUpdate writes p.Job when the stored version is p.Job.Version, with its
// status events and its operational outbox events (p.Outbox) in the same
// batch, and then sets p.Job.Version to the new version.
func (s *Store) JobUpdate(ctx context.Context, p *dispatch.JobUpdateParams) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	j := p.Job
	r, err := s.newJobRecord(j, j.Version+1)
	if err != nil {
		return fmt.Errorf("update job %s: %w", j.ID, err)
	}
	events := newStatusRecords(p.Events)
	outbox := newStatusRecords(p.Outbox)
	err = s.write(ctx, func(tx *writeTx) error {
		old, err := tx.jobRecord(j.ID)
		if err != nil {
			return err
		}
		if old == nil {
			return store.ErrNotFound
		}
		if old.version != j.Version {
			return fmt.Errorf("%w: stored version is not %d", store.ErrStale, j.Version)
		}
		if err := putJob(tx, r, old); err != nil {
			return err
		}
		// The version check guards the status events: their ids are
		// minted for this change, and a repeat of the same write fails it.
		for _, e := range uniqueStatus(events) {
			if err := putStatus(tx, e); err != nil {
				return err
			}
		}
		// The outbox rows go into the job write's batch: the update and
		// its operational events commit together or not at all.
		for _, e := range outbox {
			if err := tx.set(key(pfxOutbox, e.id), e.value()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("update job %s: %w", j.ID, err)
	}
	j.Version++
	return nil
}

// JobListDue returns the due jobs of one status, lowest order key first:
// a walk of the status index, whose entries hold what it filters on.
func (s *Store) JobListDue(_ context.Context, p *dispatch.JobListDueParams) ([]*dispatch.Job, error) {
	switch p.Status {
	case dispatch.StatusPending, dispatch.StatusQueued, dispatch.StatusInProgress:
	default:
		if err := s.checkOpen(); err != nil {
			return nil, err
		}
		// Other statuses are never due.
		return nil, nil
	}
	limit := limitOr(p.Limit, 100)
	now := p.Now.UnixMilli()
	var jobs []*dispatch.Job
	err := s.read(func(db *pebble.DB) error {
		prefix := append(key(pfxJobStatus, string(p.Status)), 0)
		var ids []string
		err := scan(db, prefix, prefixEnd(prefix), false, func(k, v []byte) (bool, error) {
			d := newDec(v)
			due, delivery, sub := d.i64(), d.str(), d.str()
			if err := d.fault(); err != nil {
				return false, fmt.Errorf("decode job index: %w", err)
			}
			if due > now || (p.SubscriptionID != "" && sub != p.SubscriptionID) ||
				(p.Delivery != "" && delivery != string(p.Delivery)) {
				return true, nil
			}
			ids = append(ids, lastPart(k, len(prefix)))
			return len(ids) < limit, nil
		})
		if err != nil {
			return err
		}
		jobs, err = s.jobsAt(db, ids)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list due %s jobs: %w", p.Status, err)
	}
	return jobs, nil
}

// JobListGroup returns jobs of one message group of one subscription in
// ascending order key.
func (s *Store) JobListGroup(_ context.Context, p *dispatch.JobListGroupParams) ([]*dispatch.Job, error) {
	limit := limitOr(p.Limit, 100)
	var jobs []*dispatch.Job
	err := s.read(func(db *pebble.DB) error {
		prefix := append(key(pfxJobGroup, p.SubscriptionID, p.MessageGroup), 0)
		upper := prefixEnd(prefix)
		if p.BeforeOrderKey != "" {
			upper = append(append([]byte(nil), prefix...), p.BeforeOrderKey...)
		}
		var ids []string
		err := scan(db, prefix, upper, false, func(k, v []byte) (bool, error) {
			if len(p.Statuses) > 0 && !slices.Contains(p.Statuses, dispatch.Status(v)) {
				return true, nil
			}
			ids = append(ids, lastPart(k, len(prefix)))
			return len(ids) < limit, nil
		})
		if err != nil {
			return err
		}
		jobs, err = s.jobsAt(db, ids)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list jobs of group %s: %w", p.MessageGroup, err)
	}
	return jobs, nil
}

// JobDeleteFinishedBefore deletes up to p.Limit finished jobs last updated
// before p.Before, oldest first.
func (s *Store) JobDeleteFinishedBefore(ctx context.Context, p *dispatch.JobDeleteFinishedBeforeParams) (int, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	n := 0
	err := s.write(ctx, func(tx *writeTx) error {
		n = 0
		ids, err := timeIndexIDs(tx.b, []byte{pfxJobFinished}, key(pfxJobFinished, p.Before.UnixMilli()), limitOr(p.Limit, 1000))
		if err != nil {
			return err
		}
		var recs []*jobRecord
		for _, id := range ids {
			r, err := tx.jobRecord(id)
			if err != nil {
				return err
			}
			if r != nil {
				recs = append(recs, r)
			}
		}
		for _, r := range recs {
			if err := deleteJob(tx, r); err != nil {
				return err
			}
		}
		n = len(recs)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete finished jobs: %w", err)
	}
	return n, nil
}

// JobCountUnfinished counts a subscription's PENDING, QUEUED and
// IN_PROGRESS jobs, at most p.Limit.
func (s *Store) JobCountUnfinished(_ context.Context, p *replay.JobCountUnfinishedParams) (int, error) {
	limit := max(p.Limit, 1)
	n := 0
	err := s.read(func(db *pebble.DB) error {
		prefix := append(key(pfxJobOpen, p.SubscriptionID), 0)
		return scan(db, prefix, prefixEnd(prefix), false, func([]byte, []byte) (bool, error) {
			n++
			return n < limit, nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("count unfinished jobs of %s: %w", p.SubscriptionID, err)
	}
	return n, nil
}
