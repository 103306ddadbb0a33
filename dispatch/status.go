package dispatch

import (
	"errors"
	"fmt"
	"time"

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
//
// A job is created PENDING (delayed, or waiting to be queued) or QUEUED (sent
// to the queue with its creation). COMPLETED is final; ERROR and CANCELLED
// change only by an operator's retry (→ PENDING) or cancel (ERROR →
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
		return []Status{StatusPending, StatusCancelled}
	case StatusCancelled:
		return []Status{StatusPending}
	case StatusCompleted:
		return nil
	}
	return nil
}

// CanTransition reports whether a job may move from one status to another.
func CanTransition(from, to Status) bool {
	for _, s := range allowed(from) {
		if s == to {
			return true
		}
	}
	return false
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
	j.UpdatedAt = now
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

// StatusEvent returns a status event of type typ about the job, with the
// given id, at now. The caller adds what only it knows (status code,
// duration, error) to the returned event's Data.
func (j *Job) StatusEvent(id, typ string, now time.Time) stream.Event {
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
