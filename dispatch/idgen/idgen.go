// Package idgen issues the ULIDs the gateway assigns: 26 characters of
// Crockford base32, sortable by time, strictly increasing within a process.
package idgen

import (
	"crypto/rand"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// Generator issues monotonic ULIDs. The zero value is not usable; call New.
// It is safe for concurrent use.
type Generator struct {
	mu      sync.Mutex
	entropy *ulid.MonotonicEntropy
	nowFunc func() time.Time
	last    uint64
}

// New returns a generator reading time from nowFunc (time.Now when nil).
func New(nowFunc func() time.Time) *Generator {
	if nowFunc == nil {
		nowFunc = time.Now
	}
	return &Generator{entropy: ulid.Monotonic(rand.Reader, 0), nowFunc: nowFunc}
}

// New returns a fresh ULID, greater than every one this generator returned
// before, even when the clock stands still or steps back.
func (g *Generator) New() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	// When the wall clock stepped back, keep issuing in the last
	// millisecond so ids stay sortable in issue order.
	ms := max(ulid.Timestamp(g.nowFunc()), g.last)
	g.last = ms
	id, err := ulid.New(ms, g.entropy)
	if err != nil {
		// The monotonic entropy overflowed within one millisecond (2^80
		// ids): move to the next millisecond.
		g.last++
		id = ulid.MustNew(g.last, g.entropy)
	}
	return id.String()
}

// Derived returns the deterministic ULID whose time part is t and whose
// entropy is a hash of parts: the same inputs always give the same id. The
// gateway uses it for dispatch job ids, so that writing the jobs of an event
// twice (after a crash) is idempotent.
func Derived(t time.Time, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	var entropy [10]byte
	copy(entropy[:], h.Sum(nil))
	var id ulid.ULID
	_ = id.SetTime(ulid.Timestamp(t)) // only fails past year 10889
	_ = id.SetEntropy(entropy[:])     // always 10 bytes
	return id.String()
}

// Time returns the time part of a ULID (millisecond precision); ok is false
// when id is not a ULID.
func Time(id string) (t time.Time, ok bool) {
	u, err := ulid.ParseStrict(id)
	if err != nil {
		return time.Time{}, false
	}
	return ulid.Time(u.Time()).UTC(), true
}

// WithTime returns the ULID id with its time part set to t (truncated to
// the millisecond) and its random part kept; id unchanged when it is not a
// ULID.
func WithTime(id string, t time.Time) string {
	u, err := ulid.ParseStrict(id)
	if err != nil {
		return id
	}
	if err := u.SetTime(ulid.Timestamp(t)); err != nil {
		return id // only past year 10889
	}
	return u.String()
}
