package mongostore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/hooklane/hooklane/store"
)

// jobCommitMaxOps bounds the job writes of one shared bulkWrite.
const jobCommitMaxOps = 500

// jobCommitTimeout bounds one shared bulkWrite: it runs on behalf of
// several callers, so no single caller's context may cancel it.
const jobCommitTimeout = 30 * time.Second

// jobWrite is one JobUpdate's write on MongoDB: an update of job id
// filtered on the version it read, setting the job's writeToken to token,
// unique to this write. (FerretDB's replace under its write guard is not
// shared: see replaceJob.)
type jobWrite struct {
	id       string
	expected int64
	token    string
	model    mongo.WriteModel
	done     chan error
}

// jobCommitter commits the job writes of concurrent JobUpdate calls (the
// claims and outcomes of concurrent deliveries) together: a group commit,
// like groupInserter. A caller that finds no bulkWrite running sends one
// at once with its write and those of every caller that arrived
// meanwhile; a caller that finds one running waits for the next. Nobody
// waits for a timer. Two writes of one job never share a bulkWrite (the
// later waits for the next), so each job's outcome can be told apart.
//
// A bulkWrite's answer gives only how many of its updates matched. When
// every one did, every caller succeeded; when some did not (another writer
// moved the job on, or deleted it), the jobs are read again: a write that
// landed left its token in the job (see resolve).
type jobCommitter struct {
	s *Store

	mu      sync.Mutex
	pending []*jobWrite
	running bool

	// tokenPrefix and tokenSeq make the write tokens: unique to this
	// Store (random) and to the write (a counter).
	tokenPrefix string
	tokenSeq    atomic.Uint64
}

func newJobCommitter(s *Store) (*jobCommitter, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("make write token prefix: %w", err)
	}
	return &jobCommitter{s: s, tokenPrefix: hex.EncodeToString(b[:]) + "-"}, nil
}

// newToken returns a write token no other write carries.
func (c *jobCommitter) newToken() string {
	return c.tokenPrefix + strconv.FormatUint(c.tokenSeq.Add(1), 36)
}

// commit runs w, sharing the bulkWrite with concurrent callers, and
// returns its outcome: nil when w's write landed, store.ErrStale when the
// job's version had moved on, store.ErrNotFound when the job is gone, or
// the command's error. A caller whose ctx ends while its write still
// waits returns ctx's error, its write withdrawn; once its write is sent,
// it waits for the outcome (bounded by jobCommitTimeout).
func (c *jobCommitter) commit(ctx context.Context, w *jobWrite) error {
	w.done = make(chan error, 1)
	c.mu.Lock()
	c.pending = append(c.pending, w)
	lead := !c.running
	c.running = true
	c.mu.Unlock()
	if lead {
		// No bulkWrite was running: pending held only w, which the one
		// this call sends carries.
		c.lead(ctx)
		return <-w.done
	}
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
	}
	c.mu.Lock()
	for i, p := range c.pending {
		if p == w {
			c.pending = append(c.pending[:i], c.pending[i+1:]...)
			c.mu.Unlock()
			return fmt.Errorf("wait to write job %s: %w", w.id, ctx.Err())
		}
	}
	c.mu.Unlock()
	return <-w.done
}

// lead sends one bulkWrite of what is pending, then passes the lead on (to
// a goroutine) when more arrived meanwhile, so the leader's caller waits
// for one command only.
func (c *jobCommitter) lead(ctx context.Context) {
	c.mu.Lock()
	batch := c.take()
	c.mu.Unlock()
	if len(batch) > 0 {
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), jobCommitTimeout)
		errs := c.write(bctx, batch)
		cancel()
		for i, w := range batch {
			w.done <- errs[i]
		}
	}
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.running = false
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	go c.lead(context.WithoutCancel(ctx))
}

// take removes from pending the writes of the next bulkWrite: in arrival
// order, up to jobCommitMaxOps, at most one per job (the others stay, in
// order, for a later one). c.mu is held.
func (c *jobCommitter) take() []*jobWrite {
	batch := make([]*jobWrite, 0, min(len(c.pending), jobCommitMaxOps))
	taken := make(map[string]bool, cap(batch))
	rest := c.pending[:0:0]
	for _, w := range c.pending {
		if len(batch) < jobCommitMaxOps && !taken[w.id] {
			taken[w.id] = true
			batch = append(batch, w)
		} else {
			rest = append(rest, w)
		}
	}
	c.pending = rest
	return batch
}

// write sends batch as one unordered bulkWrite and returns each write's
// outcome.
func (c *jobCommitter) write(ctx context.Context, batch []*jobWrite) []error {
	models := make([]mongo.WriteModel, len(batch))
	for i, w := range batch {
		models[i] = w.model
	}
	errs := make([]error, len(batch))
	res, err := c.s.jobs.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
	var bwe mongo.BulkWriteException
	switch {
	case err == nil:
	case errors.As(err, &bwe) && bwe.WriteConcernError == nil && len(bwe.WriteErrors) > 0:
		// Some writes failed on their own (each its error); the others
		// ran.
		for _, we := range bwe.WriteErrors {
			if we.Index >= 0 && we.Index < len(errs) {
				errs[we.Index] = translate(ctx, mongo.BulkWriteException{WriteErrors: []mongo.BulkWriteError{we}})
			}
		}
	default:
		err = translate(ctx, err)
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	ran := 0
	for _, e := range errs {
		if e == nil {
			ran++
		}
	}
	if res == nil || int(res.MatchedCount) < ran {
		matched := 0
		if res != nil {
			matched = int(res.MatchedCount)
		}
		c.resolve(ctx, batch, errs, ran-matched)
	}
	return errs
}

// jobWritten is what resolve reads of a job: its version and the token of
// the write that set it.
type jobWritten struct {
	ID         string `bson:"_id"`
	Version    int64  `bson:"version"`
	WriteToken string `bson:"writeToken"`
}

// resolve finds which writes of batch did not land, when unmatched of
// those without an error (errs[i] nil) did not, by reading their jobs
// again, and sets their errors. A write that landed left its token in
// the job, unless a later write replaced it; one that did not finds the
// job gone (store.ErrNotFound) or at a version it did not write: its
// expected one, or the next written by another (store.ErrStale). A job
// already past the next version, under another's token, is in doubt:
// when the certain misses account for every unmatched write, the ones in
// doubt landed; otherwise they are reported stale (at worst a write that
// landed and was overwritten within the same moment is reported as
// lost).
func (c *jobCommitter) resolve(ctx context.Context, batch []*jobWrite, errs []error, unmatched int) {
	ids := make([]string, 0, len(batch))
	for i, w := range batch {
		if errs[i] == nil {
			ids = append(ids, w.id)
		}
	}
	found, err := c.s.readJobsWritten(ctx, ids)
	if err != nil {
		err = fmt.Errorf("read back jobs of an unmatched bulk write: %w", err)
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
		return
	}
	var doubt []int
	missed := 0
	for i, w := range batch {
		if errs[i] != nil {
			continue
		}
		cur, ok := found[w.id]
		switch {
		case !ok:
			errs[i] = store.ErrNotFound
			missed++
		case cur.WriteToken == w.token:
		case cur.Version <= w.expected+1:
			errs[i] = store.ErrStale
			missed++
		default:
			doubt = append(doubt, i)
		}
	}
	if missed >= unmatched {
		return
	}
	if missed+len(doubt) != unmatched {
		c.s.logger.WarnContext(ctx, "job writes of a bulk write in doubt reported stale",
			"unmatched", unmatched, "missed", missed, "in_doubt", len(doubt))
	}
	for _, i := range doubt {
		errs[i] = store.ErrStale
	}
}

// readJobsWritten reads the version and write token of the jobs ids, by
// id: one find on MongoDB, one per id on FerretDB (which pushes down only
// an {_id: value} filter; MongoDB would take the first as the one).
func (s *Store) readJobsWritten(ctx context.Context, ids []string) (map[string]jobWritten, error) {
	proj := bson.D{{Key: "version", Value: 1}, {Key: "writeToken", Value: 1}}
	out := make(map[string]jobWritten, len(ids))
	if !s.writeGuards {
		docs, err := findAll[jobWritten](ctx, s.jobs, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}},
			options.Find().SetProjection(proj))
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			out[d.ID] = d
		}
		return out, nil
	}
	for i, id := range ids {
		var d jobWritten
		err := s.jobs.FindOne(withCommandTagIf(ctx, i > 0, tagFerretDB), bson.D{{Key: "_id", Value: id}},
			options.FindOne().SetProjection(proj)).Decode(&d)
		if errors.Is(err, mongo.ErrNoDocuments) {
			continue
		}
		if err != nil {
			return nil, translate(ctx, err)
		}
		out[d.ID] = d
	}
	return out, nil
}
