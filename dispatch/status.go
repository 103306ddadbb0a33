package dispatch

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/stream"
)

// Status is a job's state. The machine, with every allowed move:
//
//	          ┌──────────────── retry wait, lease lost, blocked, paused ─────────┐
//	          ▼                                                                   │
//	create ─► PENDING ──queue──► QUEUED ──claim──► IN_PROGRESS ──2xx──► COMPLETED │
//	   │         ▲  ▲              │  │                 │  │                       │
//	   └─────────┼──┼──────────────┘  └─stale─► PENDING │  └───────────────────────┘
//	  (QUEUED)   │  │                                   ├─ no attempt left, 4xx ─► ERROR
//	             │  └──────── operator retry ◄──────────┼────────────────────────── ERROR, CANCELLED
//	             └──────────────────────────────────────┘
//	cancel: PENDING, QUEUED, IN_PROGRESS, ERROR ─► CANCELLED
//	operator retry: ERROR, CANCELLED ─► QUEUED at once (PENDING and due,
//	in the contract's words, then queued in the same write)
//
// A job is created PENDING (delayed, or waiting to be queued) or QUEUED (sent
// to the queue with its creation). COMPLETED is final; ERROR and CANCELLED
// change only by an operator's retry (→ PENDING, or straight to QUEUED when
// the retry queues the job in the same write) or cancel (ERROR →
// CANCELLED). The router and the pollers never move a job out of them.
type Status string

// Job statuses (API.md §5).
const (
	StatusPending    Status = "PENDING"
	StatusQueued     Status = "QUEUED"
	StatusInProgress Status = "IN_PROGRESS"
	StatusCompleted  Status = "COMPLETED"
	StatusError      Status = "ERROR"
	StatusCancelled  Status = "CANCELLED"
)

// Statuses lists every status, in the order of the machine.
func Statuses() []Status {
	return []Status{StatusPending, StatusQueued, StatusInProgress, StatusCompleted, StatusError, StatusCancelled}
}

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	switch s {
	case StatusPending, StatusQueued, StatusInProgress, StatusCompleted, StatusError, StatusCancelled:
		return true
	}
	return false
}

// Finished reports whether no automatic attempt will follow: COMPLETED,
// ERROR or CANCELLED.
func (s Status) Finished() bool {
	return s == StatusCompleted || s == StatusError || s == StatusCancelled
}

// allowed lists, per status, the statuses it may move to.
func allowed(from Status) []Status {
	switch from {
	case StatusPending:
		return []Status{StatusQueued, StatusInProgress, StatusCancelled, StatusError}
	case StatusQueued:
		return []Status{StatusInProgress, StatusPending, StatusCancelled, StatusError}
	case StatusInProgress:
		return []Status{StatusCompleted, StatusPending, StatusQueued, StatusError, StatusCancelled}
	case StatusError:
		return []Status{StatusPending, StatusQueued, StatusCancelled}
	case StatusCancelled:
		return []Status{StatusPending, StatusQueued}
	case StatusCompleted:
		return nil
	}
	return nil
}

// CanTransition reports whether a job may move from one status to another.
func CanTransition(from, to Status) bool {
	return slices.Contains(allowed(from), to)
}

// TransitionError is returned when a move the machine does not allow is
// attempted. Callers answer it with 409.
type TransitionError struct {
	From, To Status
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("job cannot move from %s to %s", e.From, e.To)
}

// ErrInvalidTransition matches every *TransitionError with errors.Is.
var ErrInvalidTransition = errors.New("invalid job transition")

// Is makes errors.Is(err, ErrInvalidTransition) true.
func (e *TransitionError) Is(target error) bool { return target == ErrInvalidTransition }

// Transition moves the job to status `to` at `now`, keeping the bookkeeping
// fields consistent: UpdatedAt always; CompletedAt on COMPLETED; the lease
// and worker cleared when leaving IN_PROGRESS; NextAttemptAt cleared unless
// the job goes PENDING (the caller sets it after). It returns a
// *TransitionError when the move is not allowed.
func (j *Job) Transition(to Status, now time.Time) error {
	if !CanTransition(j.Status, to) {
		return &TransitionError{From: j.Status, To: to}
	}
	from := j.Status
	j.Status = to
	j.Touch(now)
	now = j.UpdatedAt
	if from == StatusInProgress {
		j.Worker = ""
		j.LeaseExpiresAt = nil
	}
	if to != StatusPending {
		j.NextAttemptAt = nil
	}
	if to != StatusPending && to != StatusQueued {
		j.BlockedBy = ""
	}
	if to == StatusCompleted {
		t := now
		j.CompletedAt = &t
	}
	return nil
}

// Touch records a change of the job at now: UpdatedAt becomes now, or a
// millisecond after its previous value when now is not later than that
// (another instance's clock ahead of this one's, or two changes within one
// millisecond) — UpdatedAt only moves on, see StatusEvent.
func (j *Job) Touch(now time.Time) {
	if least := j.UpdatedAt.Truncate(time.Millisecond).Add(time.Millisecond); now.Before(least) {
		now = least
	}
	j.UpdatedAt = now
}

// StatusEvent returns a status event of type typ about the job, with the
// given id (a ULID from an idgen.Generator), at now. The caller adds what
// only it knows (status code, duration, error) to the returned event's Data.
//
// The stream orders status events by id, and the ids of one job's events
// come from the generators of every instance that changed the job. So that
// they still sort in the order of the job's changes — whatever the clocks
// of the instances, even within one millisecond — the job's UpdatedAt works
// as a Lamport clock for them: it is never below the time part of any of
// the job's event ids; each change (Transition, Touch) moves it past its
// stored value; and an id whose time part is below UpdatedAt is re-stamped
// to it (its random part kept), UpdatedAt then moving a millisecond on so
// that a further event of the same change sorts after it. With clocks that
// agree, ids are not touched.
func (j *Job) StatusEvent(id, typ string, now time.Time) stream.Event {
	id = j.causalID(id)
	return stream.Event{
		ID:      id,
		Type:    typ,
		Time:    now,
		Subject: j.ID,
		Data: stream.Data{
			JobID:         j.ID,
			EventID:       j.EventID,
			EventType:     j.Code,
			Subscription:  j.Subscription,
			Status:        string(j.Status),
			Attempt:       j.AttemptCount,
			MessageGroup:  j.MessageGroup,
			NextAttemptAt: j.NextAttemptAt,
			BlockedBy:     j.BlockedBy,
		},
	}
}

// causalID returns id, re-stamped when its time part is below the job's
// UpdatedAt, and moves UpdatedAt as StatusEvent says. An id that is not a
// ULID is returned as it is.
func (j *Job) causalID(id string) string {
	t, ok := idgen.Time(id)
	if !ok {
		return id
	}
	if least := j.UpdatedAt.Truncate(time.Millisecond); t.Before(least) {
		j.UpdatedAt = least.Add(time.Millisecond)
		return idgen.WithTime(id, least)
	}
	if t.After(j.UpdatedAt) {
		j.UpdatedAt = t
	}
	return id
}
