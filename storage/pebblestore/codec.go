package pebblestore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/hooklane/hooklane/store/binform"
)

// errCorrupt is returned when a stored value does not decode.
var errCorrupt = errors.New("stored value does not decode")

// The keyspace. Each record kind and each index has a one-byte prefix; the
// parts of a key are the record's fields, fixed-width big-endian for times
// (so byte order is time order) and a 0 byte after each string part that is
// followed by another. Every index entry is written and deleted in the same
// batch as its record.
const (
	pfxEvent        = 'e' // e<eventID>: the event
	pfxDedup        = 'd' // d<dedupKey>: the event id holding it
	pfxReceived     = 'r' // r<receivedAt><eventID>: events by time (replay, retention)
	pfxNotFannedOut = 'n' // n<receivedAt><eventID>: events whose jobs are not stored yet
	pfxEventType    = 'y' // y<type>0<eventID>: events by type (lists)
	pfxJob          = 'j' // j<jobID>: the job
	pfxJobStatus    = 'q' // q<status>0<orderKey>0<jobID> → due, delivery, subscription: the pollers' index
	pfxJobGroup     = 'g' // g<subscriptionID>0<group>0<orderKey>0<jobID> → status: ordering
	pfxJobEvent     = 'v' // v<eventID>0<jobID>: the jobs of an event
	pfxJobFinished  = 'f' // f<updatedAt><jobID>: finished jobs by time (retention)
	pfxJobOpen      = 'u' // u<subscriptionID>0<jobID>: unfinished jobs of a subscription
	pfxStatus       = 's' // s<statusEventID>: the status event (the feed, ascending id)
	pfxStatusByID   = 'b' // b<subject>0<statusEventID>: the status events of a job or event
	pfxStatusTime   = 't' // t<time><statusEventID>: status events by time (retention)
	pfxMeta         = 'M' // M<name>: markers (the in-place upgrade's)
	pfxOutbox       = 'o' // o<statusEventID>: the operational outbox (a status event, as s holds it)
)

// key builds a key from a prefix and its parts: string parts are joined
// with a 0 byte, int64 parts are 8 bytes big-endian.
func key(prefix byte, parts ...any) []byte {
	k := make([]byte, 1, 64)
	k[0] = prefix
	for i, p := range parts {
		switch v := p.(type) {
		case string:
			k = append(k, v...)
			if i < len(parts)-1 {
				k = append(k, 0)
			}
		case int64:
			k = binary.BigEndian.AppendUint64(k, orderedMillis(v))
		default:
			panic("pebblestore: key part of unknown type") // programmer error
		}
	}
	return k
}

// orderedMillis maps a signed time to an unsigned value of the same order.
func orderedMillis(ms int64) uint64 { return uint64(ms) ^ (1 << 63) } //nolint:gosec // G115: the flip of the sign bit is the point

// prefixEnd is the smallest key after every key starting with p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// lastPart returns the key's bytes after its last 0 byte, or after skip
// bytes when it has none there (a time-prefixed key).
func lastPart(k []byte, skip int) string {
	for i := len(k) - 1; i >= skip; i-- {
		if k[i] == 0 {
			return string(k[i+1:])
		}
	}
	return string(k[skip:])
}

// noTime encodes a nil optional timestamp.
const noTime = math.MinInt64

// enc appends the fields of a value: binform's primitives under the
// names the records use, and their optional times.
type enc struct{ binform.Writer }

// newEnc returns an enc appending to b.
func newEnc(b []byte) enc { return enc{binform.Writer{B: b}} }

func (e *enc) str(s string) { e.Str(s) }

func (e *enc) bytes(s []byte) { e.Bytes(s) }

func (e *enc) i64(v int64) { e.Varint(v) }

func (e *enc) optTime(t *time.Time) {
	if t == nil {
		e.i64(noTime)
		return
	}
	e.i64(t.UnixMilli())
}

// dec reads the fields enc wrote; the first failure sticks (see fault).
type dec struct{ binform.Reader[[]byte] }

// newDec returns a dec reading v; what it returns of raw aliases v.
func newDec(v []byte) dec { return dec{binform.NewReader(v)} }

// fault is the first failure, wrapping errCorrupt; nil while every read
// succeeded.
func (d *dec) fault() error {
	if err := d.Err(); err != nil {
		return fmt.Errorf("%w: %w", errCorrupt, err)
	}
	return nil
}

func (d *dec) raw() []byte { return d.Str() }

func (d *dec) str() string { return string(d.Str()) }

func (d *dec) i64() int64 { return d.Varint() }

func (d *dec) time() time.Time { return time.UnixMilli(d.i64()).UTC() }

func (d *dec) optTime() *time.Time {
	ms := d.i64()
	if ms == noTime {
		return nil
	}
	t := time.UnixMilli(ms).UTC()
	return &t
}

// millisOr is t's unix milliseconds, or def for nil.
func millisOr(t *time.Time, def int64) int64 {
	if t == nil {
		return def
	}
	return t.UnixMilli()
}

// msUTC is t as the store keeps it: UTC, whole milliseconds.
func msUTC(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Millisecond)
}

// msUTCPtr is msUTC for an optional timestamp; it returns a new pointer.
func msUTCPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := msUTC(*t)
	return &v
}

// limitOr is n, or def when n is not positive.
func limitOr(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// pageLimit bounds a page size to 1..500, defaulting to 50.
func pageLimit(n int) int {
	switch {
	case n <= 0:
		return 50
	case n > 500:
		return 500
	}
	return n
}
