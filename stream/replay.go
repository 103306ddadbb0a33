package stream

import (
	"context"
	"fmt"
	"time"
)

// TypeGap is the type of the event a client receives first when its replay
// starts before the retention window: what lay between is gone.
const TypeGap = "stream.gap"

// Cursor is where a client starts: after an id (Last-Event-ID), at a time
// (since, inclusive), or, when both are empty, live from now. AfterID wins
// over Since.
type Cursor struct {
	AfterID string
	Since   time.Time
}

// IsLive reports whether the cursor asks for no replay.
func (c Cursor) IsLive() bool { return c.AfterID == "" && c.Since.IsZero() }

// Start is the time the cursor starts at: the time in AfterID, else Since.
func (c Cursor) Start() time.Time {
	if c.AfterID != "" {
		return idTime(c.AfterID)
	}
	return c.Since
}

// Gap returns the stream.gap event for a cursor older than the retention
// window ending at now, and false when the cursor is within it.
func (c Cursor) Gap(now time.Time, retention time.Duration) (Event, bool) {
	if c.IsLive() || retention <= 0 {
		return Event{}, false
	}
	oldest := now.Add(-retention)
	if !c.Start().Before(oldest) {
		return Event{}, false
	}
	return Event{ID: FloorID(oldest), Type: TypeGap, Time: now, Subject: c.AfterID}, true
}

// Feed is one client's subscription: the hub channel it was given and the
// frontier read right after subscribing. Replay sends what is at or below
// the frontier; Live filters the channel to what is above it, so the seam
// between the two has neither gap nor duplicate.
type Feed struct {
	// C delivers live events; it is closed when the client was dropped as
	// slow or the hub closed.
	C        <-chan *Event
	frontier string
	cancel   func()
}

// Follow subscribes to the hub and pins the frontier. Call Close when done.
func (h *Hub) Follow(match func(*Event) bool) *Feed {
	ch, cancel := h.Subscribe(match)
	// The subscription exists before the frontier is read: every event
	// published after this point reaches C, everything before is ≤ frontier.
	return &Feed{C: ch, frontier: h.Frontier(), cancel: cancel}
}

// Close unsubscribes.
func (f *Feed) Close() { f.cancel() }

// Live reports whether an event received on C is new to the client: above
// the frontier, so not part of the replay.
func (f *Feed) Live(e *Event) bool { return e.ID > f.frontier }

// Frontier is the id pinned when the feed was created.
func (f *Feed) Frontier() string { return f.frontier }

// Replay sends, in ascending id order, the stored events from cursor c up
// to the feed's frontier that match (every one when match is nil).
func (f *Feed) Replay(ctx context.Context, r Reader, c Cursor, match func(*Event) bool, send func(*Event) error) error {
	return Replay(ctx, r, &ReplayParams{Cursor: c, UpTo: f.frontier, Match: match}, send)
}

// ReplayParams are the arguments of Replay.
type ReplayParams struct {
	Cursor Cursor
	// UpTo is the last id to send (inclusive), a frontier.
	UpTo string
	// Match selects the events to send; nil sends every one.
	Match func(*Event) bool
	// BatchSize is the page size of a store read: the most events a
	// replay holds at once. Default ReplayBatchDefault.
	BatchSize int
}

// ReplayBatchDefault is the page a replay reads from the store and writes
// out before it reads the next: what one replaying client holds, whatever
// the length of the history it asked for.
const ReplayBatchDefault = 100

// Replay sends, in ascending id order, the stored events from p.Cursor up
// to p.UpTo that p.Match selects, reading the store page by page. It sends
// nothing for a live cursor. An error of send ends it and is returned as is.
func Replay(ctx context.Context, r Reader, p *ReplayParams, send func(*Event) error) error {
	c, match, batch := p.Cursor, p.Match, p.BatchSize
	if c.IsLive() {
		return nil
	}
	if batch <= 0 {
		batch = ReplayBatchDefault
	}
	lp := &ListAfterParams{AfterID: c.AfterID, Limit: batch}
	if c.AfterID == "" {
		lp.Since = c.Since
	}
	for {
		page, err := r.StatusEventListAfter(ctx, lp)
		if err != nil {
			return fmt.Errorf("replay status events after %q: %w", lp.AfterID, err)
		}
		for i := range page {
			e := &page[i]
			if e.ID > p.UpTo {
				return nil
			}
			if match != nil && !match(e) {
				continue
			}
			if err := send(e); err != nil {
				return err
			}
		}
		if len(page) < batch {
			return nil
		}
		lp.AfterID = page[len(page)-1].ID
	}
}
