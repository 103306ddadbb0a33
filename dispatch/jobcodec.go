package dispatch

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/store/binform"
)

// The binary form of a job: what the embedded store keeps and a queue
// message's snapshot carries, written and read by hand (no reflection, no
// JSON) because they are on every delivery's path. A version byte, then
// every field of Job in declaration order:
//
//   - a string or []byte: its length as a uvarint, then its bytes;
//   - an integer: a zig-zag varint; a bool: one byte 0 or 1;
//   - a time: its Unix milliseconds as a varint, then the nanoseconds
//     below the millisecond as a uvarint (0: one byte) — exact, in UTC;
//   - a pointer (an optional time, LastError, Auth, TLS): a byte 0 for
//     nil, else 1 and the value;
//   - a slice or map: a uvarint 0 for nil, else its length + 1 and its
//     elements (a map's in key order), so nil and empty stay apart.
//
// A field added to Job needs its line in appendJob and parseJob, and a new
// jobBinaryVersion when it changes what an earlier version wrote;
// TestJobBinaryRoundTripsEveryField fails until appendJob writes it.

// jobBinaryVersion is the first byte of a job's binary form.
const jobBinaryVersion = 1

// ErrJobBinary is returned by ParseJobBinary for bytes that are not a job
// in the binary form.
var ErrJobBinary = errors.New("not a job in the binary form")

// AppendJobBinary appends j's binary form to b.
func AppendJobBinary(b []byte, j *Job) []byte {
	w := jobWriter{binform.Writer{B: b}}
	w.B = append(w.B, jobBinaryVersion)
	w.str(j.ID)
	w.str(string(j.Kind))
	w.str(j.Code)
	w.str(j.Subject)
	w.str(j.EventID)
	w.str(j.SubscriptionID)
	w.str(j.Subscription)
	w.str(j.CorrelationID)
	w.str(j.TargetURL)
	w.str(string(j.Mode))
	w.str(string(j.Delivery))
	w.str(j.MessageGroup)
	w.str(j.DispatchPoolID)
	w.strMap(j.Headers)
	w.int(int64(j.TimeoutSeconds))
	w.int(int64(j.MaxAgeSeconds))
	w.bool(j.DataOnly)
	w.int(int64(j.Retry.MaxAttempts))
	w.int(int64(j.Retry.InitialBackoffSeconds))
	w.int(int64(j.Retry.MaxBackoffSeconds))
	w.bytes(j.Payload)
	w.str(j.Secret)
	w.auth(j.Auth)
	w.tls(j.TLS)
	w.str(string(j.Status))
	w.int(int64(j.AttemptCount))
	w.int(int64(j.MaxAttempts))
	w.optTime(j.NextAttemptAt)
	w.optStr(j.LastError)
	w.str(j.BlockedBy)
	w.str(j.Worker)
	w.optTime(j.LeaseExpiresAt)
	w.attempts(j.Attempts)
	w.time(j.CreatedAt)
	w.time(j.UpdatedAt)
	w.optTime(j.CompletedAt)
	w.optTime(j.RetriedAt)
	w.str(j.TraceParent)
	w.int(j.Version)
	return w.B
}

// ParseJobBinary decodes the binary form AppendJobBinary writes; b must
// hold it exactly. The job shares no memory with b.
func ParseJobBinary(b []byte) (*Job, error) {
	// One conversion for every string of the job: they are substrings of
	// it.
	r := jobReader{binform.NewReader(string(b))}
	j := r.job()
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrJobBinary, err)
	}
	if r.Len() > 0 {
		return nil, fmt.Errorf("%w: %d bytes after the job", ErrJobBinary, r.Len())
	}
	return j, nil
}

// job reads a job's binary form; nil when r fails.
func (r *jobReader) job() *Job {
	if r.take(1, "version") != string(rune(jobBinaryVersion)) {
		r.fail("version")
		return nil
	}
	j := &Job{}
	j.ID = r.str()
	j.Kind = Kind(r.str())
	j.Code = r.str()
	j.Subject = r.str()
	j.EventID = r.str()
	j.SubscriptionID = r.str()
	j.Subscription = r.str()
	j.CorrelationID = r.str()
	j.TargetURL = r.str()
	j.Mode = Mode(r.str())
	j.Delivery = Delivery(r.str())
	j.MessageGroup = r.str()
	j.DispatchPoolID = r.str()
	j.Headers = r.strMap()
	j.TimeoutSeconds = r.int()
	j.MaxAgeSeconds = r.int()
	j.DataOnly = r.bool()
	j.Retry.MaxAttempts = r.int()
	j.Retry.InitialBackoffSeconds = r.int()
	j.Retry.MaxBackoffSeconds = r.int()
	j.Payload = r.bytes()
	j.Secret = r.str()
	j.Auth = r.auth()
	j.TLS = r.tls()
	j.Status = Status(r.str())
	j.AttemptCount = r.int()
	j.MaxAttempts = r.int()
	j.NextAttemptAt = r.optTime()
	j.LastError = r.optStr()
	j.BlockedBy = r.str()
	j.Worker = r.str()
	j.LeaseExpiresAt = r.optTime()
	j.Attempts = r.attempts()
	j.CreatedAt = r.time()
	j.UpdatedAt = r.time()
	j.CompletedAt = r.optTime()
	j.RetriedAt = r.optTime()
	j.TraceParent = r.str()
	j.Version = r.i64()
	if r.Err() != nil {
		return nil
	}
	return j
}

// jobWriter appends the parts of a job's binary form: binform's
// primitives under the names the form uses, and the job's own shapes.
type jobWriter struct{ binform.Writer }

func (w *jobWriter) uvarint(v uint64) { w.Uvarint(v) }

func (w *jobWriter) int(v int64) { w.Varint(v) }

func (w *jobWriter) str(s string) { w.Str(s) }

func (w *jobWriter) bool(v bool) { w.Bool(v) }

// count writes a slice's or map's length + 1, 0 for nil.
func (w *jobWriter) count(n int, isNil bool) {
	if isNil {
		w.uvarint(0)
		return
	}
	w.uvarint(uint64(n) + 1) //nolint:gosec // G115: a length, never negative
}

func (w *jobWriter) bytes(v []byte) {
	w.count(len(v), v == nil)
	w.B = append(w.B, v...)
}

func (w *jobWriter) strs(v []string) {
	w.count(len(v), v == nil)
	for _, s := range v {
		w.str(s)
	}
}

func (w *jobWriter) strMap(m map[string]string) {
	w.count(len(m), m == nil)
	if len(m) == 1 {
		for k, v := range m {
			w.str(k)
			w.str(v)
		}
		return
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		w.str(k)
		w.str(m[k])
	}
}

func (w *jobWriter) time(t time.Time) {
	w.int(t.UnixMilli())
	w.uvarint(uint64(t.Nanosecond() % int(time.Millisecond))) //nolint:gosec // G115: 0 ≤ n < 1e6
}

func (w *jobWriter) optTime(t *time.Time) {
	w.bool(t != nil)
	if t != nil {
		w.time(*t)
	}
}

func (w *jobWriter) optStr(s *string) {
	w.bool(s != nil)
	if s != nil {
		w.str(*s)
	}
}

func (w *jobWriter) auth(a *endpoint.Auth) {
	w.bool(a != nil)
	if a == nil {
		return
	}
	w.str(string(a.Type))
	w.str(a.Token)
	w.str(a.Username)
	w.str(a.Password)
	w.str(a.TokenURL)
	w.str(a.ClientID)
	w.str(a.ClientSecret)
	w.strs(a.Scopes)
	w.str(a.Audience)
}

func (w *jobWriter) tls(t *endpoint.TLS) {
	w.bool(t != nil)
	if t == nil {
		return
	}
	w.str(t.ClientCertificate)
	w.str(t.ClientKey)
	w.str(t.CACertificate)
}

func (w *jobWriter) attempts(v []Attempt) {
	w.count(len(v), v == nil)
	for i := range v {
		a := &v[i]
		w.int(int64(a.Attempt))
		w.str(a.Action)
		w.time(a.StartedAt)
		w.int(a.DurationMs)
		w.int(int64(a.StatusCode))
		w.str(a.Error)
		w.str(a.ResponseBody)
		w.str(a.Worker)
	}
}

// jobReader reads what jobWriter wrote, over a string (every string of
// the job a substring of it); the first failure sticks and every later
// read returns a zero value.
type jobReader struct{ binform.Reader[string] }

func (r *jobReader) fail(what string) { r.Fail(what) }

func (r *jobReader) uvarint() uint64 { return r.Uvarint() }

func (r *jobReader) i64() int64 { return r.Varint() }

func (r *jobReader) int() int { return int(r.Varint()) }

func (r *jobReader) take(n uint64, what string) string { return r.Take(n, what) }

func (r *jobReader) str() string { return r.Str() }

func (r *jobReader) bool() bool { return r.Bool() }

// count reads a slice's or map's length; isNil for 0. A length beyond the
// bytes left (each element takes one at least) fails, so that garbled
// input allocates nothing big.
func (r *jobReader) count() (n int, isNil bool) {
	c := r.uvarint()
	if c == 0 {
		return 0, true
	}
	if c-1 > uint64(r.Len()) { //nolint:gosec // G115: a length, never negative
		r.fail("length")
		return 0, true
	}
	return int(c - 1), false //nolint:gosec // G115: bounded by the input's length above
}

func (r *jobReader) bytes() []byte {
	c := r.uvarint()
	if c == 0 {
		return nil
	}
	return []byte(r.take(c-1, "bytes"))
}

func (r *jobReader) strs() []string {
	n, isNil := r.count()
	if isNil {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.str()
	}
	return out
}

func (r *jobReader) strMap() map[string]string {
	n, isNil := r.count()
	if isNil {
		return nil
	}
	m := make(map[string]string, n)
	for range n {
		k := r.str()
		m[k] = r.str()
	}
	if r.Err() != nil {
		return nil
	}
	return m
}

func (r *jobReader) time() time.Time {
	ms := r.i64()
	ns := r.uvarint()
	if ns >= uint64(time.Millisecond) {
		r.fail("time")
		return time.Time{}
	}
	return time.UnixMilli(ms).Add(time.Duration(ns)).UTC()
}

func (r *jobReader) optTime() *time.Time {
	if !r.bool() {
		return nil
	}
	t := r.time()
	return &t
}

func (r *jobReader) optStr() *string {
	if !r.bool() {
		return nil
	}
	s := r.str()
	return &s
}

func (r *jobReader) auth() *endpoint.Auth {
	if !r.bool() {
		return nil
	}
	return &endpoint.Auth{
		Type: endpoint.AuthType(r.str()), Token: r.str(), Username: r.str(), Password: r.str(),
		TokenURL: r.str(), ClientID: r.str(), ClientSecret: r.str(), Scopes: r.strs(), Audience: r.str(),
	}
}

func (r *jobReader) tls() *endpoint.TLS {
	if !r.bool() {
		return nil
	}
	return &endpoint.TLS{ClientCertificate: r.str(), ClientKey: r.str(), CACertificate: r.str()}
}

func (r *jobReader) attempts() []Attempt {
	n, isNil := r.count()
	if isNil {
		return nil
	}
	out := make([]Attempt, n)
	for i := range out {
		a := &out[i]
		a.Attempt = r.int()
		a.Action = r.str()
		a.StartedAt = r.time()
		a.DurationMs = r.i64()
		a.StatusCode = r.int()
		a.Error = r.str()
		a.ResponseBody = r.str()
		a.Worker = r.str()
		if r.Err() != nil {
			return nil
		}
	}
	return out
}
