package storespike

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/stream"
)

// pebbleStore is the prototype of the data plane on Pebble. Its keyspace:
//
//	e/<eventID>                  the event: received_at, then its CloudEvent (JSON)
//	d/<dedupKey>                 the dedup index: the event id
//	j/<jobID>                    the job: a header (version, due, status), its
//	                             document (JSON), then its status history
//	                             (length-prefixed status events, appended)
//	js/<status>/<due>/<jobID>    the pollers' index (JobListDue), kept by hand
//	s/<statusEventID>            the status feed (/api/stream resume and
//	                             retention by time: the ids are ULIDs)
//
// Every write is one batch committed with pebble.Sync: concurrent commits
// share the WAL's fsync (Pebble's commit pipeline groups them). Pebble has
// no transactions, so a read-check-write (the dedup lookup, the version
// check) holds a striped lock of its key for the read and the commit: the
// embedded store is one process, which owns ./data.
type pebbleStore struct {
	db    *pebble.DB
	seed  maphash.Seed
	locks [256]sync.Mutex
}

// quietLogger drops Pebble's informational logs.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

func openPebble(tb testing.TB, dir string) *pebbleStore {
	tb.Helper()
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietLogger{}})
	require.NoError(tb, err)
	return &pebbleStore{db: db, seed: maphash.MakeSeed()}
}

func (s *pebbleStore) lock(key string) *sync.Mutex {
	return &s.locks[maphash.String(s.seed, key)%uint64(len(s.locks))]
}

func (s *pebbleStore) Close() error { return s.db.Close() } //nolint:wrapcheck // Pebble's error, in a test

// key joins a prefix and the parts of a key.
func key(prefix string, parts ...string) []byte {
	k := []byte(prefix)
	for _, p := range parts {
		k = append(append(k, '/'), p...)
	}
	return k
}

// dueKey is the pollers' index entry of a job.
func dueKey(status string, due int64, id string) []byte {
	k := append([]byte("js/"+status+"/"), make([]byte, 8)...)
	binary.BigEndian.PutUint64(k[len(k)-8:], uint64(due)) //nolint:gosec // G115: unix milliseconds, never negative here
	return append(append(k, '/'), id...)
}

// jobHeader is the fixed part of a job's value: version, due, status.
type jobHeader struct {
	version int64
	due     int64
	status  string
}

const jobHeaderLen = 8 + 8 + 1

// jobValue encodes a job's value: header, document length and document,
// then the history.
func jobValue(h jobHeader, doc, history []byte) []byte {
	v := make([]byte, 0, jobHeaderLen+len(h.status)+4+len(doc)+len(history))
	v = binary.BigEndian.AppendUint64(v, uint64(h.version)) //nolint:gosec // G115: a version is positive
	v = binary.BigEndian.AppendUint64(v, uint64(h.due))     //nolint:gosec // G115: unix milliseconds
	v = append(v, byte(len(h.status)))                      //nolint:gosec // G115: a status name is a few bytes
	v = append(v, h.status...)
	v = binary.BigEndian.AppendUint32(v, uint32(len(doc))) //nolint:gosec // G115: a job document is far below 4 GiB
	v = append(v, doc...)
	return append(v, history...)
}

// parseJobValue splits a job's value into its header and its history.
func parseJobValue(v []byte) (jobHeader, []byte, error) {
	if len(v) < jobHeaderLen {
		return jobHeader{}, nil, errors.New("job value too short")
	}
	h := jobHeader{
		version: int64(binary.BigEndian.Uint64(v)),     //nolint:gosec // G115: written from an int64
		due:     int64(binary.BigEndian.Uint64(v[8:])), //nolint:gosec // G115: written from an int64
	}
	n := int(v[16])
	rest := v[jobHeaderLen:]
	if len(rest) < n+4 {
		return jobHeader{}, nil, errors.New("job value truncated")
	}
	h.status = string(rest[:n])
	rest = rest[n:]
	docLen := int(binary.BigEndian.Uint32(rest))
	if len(rest) < 4+docLen {
		return jobHeader{}, nil, errors.New("job document truncated")
	}
	return h, rest[4+docLen:], nil
}

// appendHistory appends a length-prefixed status event to a history.
func appendHistory(history, rec []byte) []byte {
	history = binary.AppendUvarint(history, uint64(len(rec)))
	return append(history, rec...)
}

// statusRecord is a status event as stored in the feed and the history.
type statusRecord struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Time    int64           `json:"time"`
	Subject string          `json:"subject"`
	Data    json.RawMessage `json:"data"`
}

func encodeStatus(e *stream.Event) ([]byte, error) {
	data, err := json.Marshal(e.Data)
	if err != nil {
		return nil, fmt.Errorf("encode status event %s: %w", e.ID, err)
	}
	b, err := json.Marshal(statusRecord{ID: e.ID, Type: e.Type, Time: e.Time.UnixMilli(), Subject: e.Subject, Data: data})
	if err != nil {
		return nil, fmt.Errorf("encode status event %s: %w", e.ID, err)
	}
	return b, nil
}

// jobDocument is the stored form of a job, as sqlitestore writes it: its
// fields with their JSON tags, without the API's MarshalJSON.
type jobDocument dispatch.Job

func encodeJob(j *dispatch.Job) ([]byte, jobHeader, error) {
	doc, err := json.Marshal((*jobDocument)(j))
	if err != nil {
		return nil, jobHeader{}, fmt.Errorf("encode job %s: %w", j.ID, err)
	}
	return doc, jobHeader{version: j.Version, due: jobDue(j), status: string(j.Status)}, nil
}

// jobDue is the time a poller finds a job at in its status: when a PENDING
// job is due, when a QUEUED one was queued (stale-queued rescue), when an
// IN_PROGRESS one's lease ends, when a finished one finished (retention).
func jobDue(j *dispatch.Job) int64 {
	switch {
	case j.Status == dispatch.StatusPending && j.NextAttemptAt != nil:
		return j.NextAttemptAt.UnixMilli()
	case j.Status == dispatch.StatusInProgress && j.LeaseExpiresAt != nil:
		return j.LeaseExpiresAt.UnixMilli()
	default:
		return j.UpdatedAt.UnixMilli()
	}
}

func (s *pebbleStore) Ingest(_ context.Context, it *dispatch.EventIngestItem) (bool, error) {
	ev := it.Event
	doc, err := ev.Event.MarshalJSON()
	if err != nil {
		return false, fmt.Errorf("encode event %s: %w", ev.ID, err)
	}
	b := s.db.NewBatch()
	defer func() { _ = b.Close() }()
	eventValue := binary.BigEndian.AppendUint64(nil, uint64(ev.ReceivedAt.UnixMilli()))
	if err := b.Set(key("e", ev.ID), append(eventValue, doc...), nil); err != nil {
		return false, fmt.Errorf("set event: %w", err)
	}
	if err := b.Set(key("d", ev.DedupKey), []byte(ev.ID), nil); err != nil {
		return false, fmt.Errorf("set dedup key: %w", err)
	}
	histories := make(map[string][]byte, len(it.Jobs))
	for i := range it.StatusEvents {
		e := &it.StatusEvents[i]
		rec, err := encodeStatus(e)
		if err != nil {
			return false, err
		}
		if err := b.Set(key("s", e.ID), rec, nil); err != nil {
			return false, fmt.Errorf("set status event: %w", err)
		}
		histories[e.Subject] = appendHistory(histories[e.Subject], rec)
	}
	for _, j := range it.Jobs {
		j.Version = 1
		doc, h, err := encodeJob(j)
		if err != nil {
			return false, err
		}
		if err := b.Set(key("j", j.ID), jobValue(h, doc, histories[j.ID]), nil); err != nil {
			return false, fmt.Errorf("set job: %w", err)
		}
		if err := b.Set(dueKey(h.status, h.due, j.ID), nil, nil); err != nil {
			return false, fmt.Errorf("set job index: %w", err)
		}
	}
	mu := s.lock(ev.DedupKey)
	mu.Lock()
	defer mu.Unlock()
	_, closer, err := s.db.Get(key("d", ev.DedupKey))
	switch {
	case err == nil:
		_ = closer.Close()
		for _, j := range it.Jobs {
			j.Version = 0
		}
		return true, nil
	case !errors.Is(err, pebble.ErrNotFound):
		return false, fmt.Errorf("look up dedup key: %w", err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return false, fmt.Errorf("commit ingest: %w", err)
	}
	return false, nil
}

func (s *pebbleStore) Update(_ context.Context, j *dispatch.Job, ev stream.Event) error {
	rec, err := encodeStatus(&ev)
	if err != nil {
		return err
	}
	next := *j
	next.Version = j.Version + 1
	doc, h, err := encodeJob(&next)
	if err != nil {
		return err
	}
	jk := key("j", j.ID)
	mu := s.lock(j.ID)
	mu.Lock()
	defer mu.Unlock()
	v, closer, err := s.db.Get(jk)
	if err != nil {
		return fmt.Errorf("read job %s: %w", j.ID, err)
	}
	old, history, err := parseJobValue(v)
	if err == nil && old.version != j.Version {
		err = fmt.Errorf("job %s: stored version %d is not %d", j.ID, old.version, j.Version)
	}
	if err != nil {
		_ = closer.Close()
		return err
	}
	value := jobValue(h, doc, appendHistory(history, rec))
	_ = closer.Close() // history is Pebble's memory until here: value holds a copy
	b := s.db.NewBatch()
	defer func() { _ = b.Close() }()
	if err := b.Set(jk, value, nil); err != nil {
		return fmt.Errorf("set job: %w", err)
	}
	if err := b.Delete(dueKey(old.status, old.due, j.ID), nil); err != nil {
		return fmt.Errorf("delete job index: %w", err)
	}
	if err := b.Set(dueKey(h.status, h.due, j.ID), nil, nil); err != nil {
		return fmt.Errorf("set job index: %w", err)
	}
	if err := b.Set(key("s", ev.ID), rec, nil); err != nil {
		return fmt.Errorf("set status event: %w", err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("commit job %s: %w", j.ID, err)
	}
	j.Version++
	return nil
}
