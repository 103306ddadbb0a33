package mongostore

import (
	"context"
	"sync"
	"time"
)

// fanOutMarksMax bounds the event ids waiting for their fannedOutAt mark;
// past it (the marks failing for a long time) an ingest writes its marks
// itself, as before.
const fanOutMarksMax = 100_000

// fanOutMarksBatch bounds the ids one marking command carries.
const fanOutMarksBatch = 1000

// fanOutMarks holds the ids of ingested events whose jobs are stored but
// whose fannedOutAt is not written yet: EventIngest leaves the mark out of
// the request (its two commands are the event insert and the jobs insert)
// and the status relay's goroutine writes the marks of every event
// ingested since its last round in one updateMany (see
// Store.markFannedOut; per id on FerretDB). Until its mark lands the
// process reads an event as fanned out (EventGetByID, EventList), and
// EventListNotFannedOut writes the waiting marks before it queries. A
// crash loses the waiting marks: the recovery poller re-fans those events
// (their jobs are stored, the re-fan inserts nothing), and another
// instance may read such an event unmarked for up to a relay interval.
type fanOutMarks struct {
	mu sync.Mutex
	// ids maps each waiting event id to when it was ingested.
	ids map[string]time.Time
	// written counts the calls of done: a list that sees it change while
	// it read knows a mark may have left ids after the read missed it.
	written uint64
	// round serializes the marking rounds (the run loop's and flushes).
	round sync.Mutex
}

// add records that the events ids have their jobs stored at `at`; it
// returns false, recording none, when fanOutMarksMax would be passed (the
// caller then writes their marks itself).
func (m *fanOutMarks) add(ids []string, at time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.ids)+len(ids) > fanOutMarksMax {
		return false
	}
	if m.ids == nil {
		m.ids = make(map[string]time.Time)
	}
	for _, id := range ids {
		m.ids[id] = at
	}
	return true
}

// at returns when event id was fanned out, if its mark is waiting.
func (m *fanOutMarks) at(id string) (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok := m.ids[id]
	return at, ok
}

// forget drops the waiting marks of ids (a test puts events back in their
// unmarked state).
func (m *fanOutMarks) forget(ids []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		delete(m.ids, id)
	}
}

// take returns up to fanOutMarksBatch waiting ids (they stay waiting, and
// read as marked, until done removes them).
func (m *fanOutMarks) take() []any {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := make([]any, 0, min(len(m.ids), fanOutMarksBatch))
	for id := range m.ids {
		if len(ids) == fanOutMarksBatch {
			break
		}
		ids = append(ids, id)
	}
	return ids
}

// writtenCount returns how many times marks left the waiting set.
func (m *fanOutMarks) writtenCount() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.written
}

// done removes ids, whose marks are written.
func (m *fanOutMarks) done(ids []any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.written++
	for _, id := range ids {
		if s, ok := id.(string); ok {
			delete(m.ids, s)
		}
	}
}

// writeFanOutMarks writes the waiting marks, one command (per id on
// FerretDB) per fanOutMarksBatch ids, until fewer than a batch were
// waiting or a write fails (its ids stay waiting for the next round).
func (s *Store) writeFanOutMarks(ctx context.Context) error {
	m := &s.fanOutMarks
	m.round.Lock()
	defer m.round.Unlock()
	for {
		ids := m.take()
		if len(ids) == 0 {
			return nil
		}
		if err := s.markFannedOut(ctx, ids, ms(s.nowFunc())); err != nil {
			return err
		}
		m.done(ids)
		if len(ids) < fanOutMarksBatch {
			return nil
		}
	}
}
