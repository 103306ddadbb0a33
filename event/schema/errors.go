package schema

import "github.com/hooklane/hooklane/store"

// NotFoundError is a lookup of the Catalog that found nothing. What names
// the missing thing: "event type" or "schema version". It wraps
// store.ErrNotFound, so errors.Is(err, store.ErrNotFound) holds.
type NotFoundError struct {
	What string
}

func (e *NotFoundError) Error() string { return e.What + " not found" }

// Unwrap returns store.ErrNotFound.
func (e *NotFoundError) Unwrap() error { return store.ErrNotFound }

// Conflict is a change the Catalog refuses because of the current state of
// the event type (the API answers 409): a code or version that exists, a
// move the version lifecycle forbids, a bound type, or a write that kept
// racing with other writers. Detail says which, for a person. It wraps
// store.ErrConflict, so errors.Is(err, store.ErrConflict) holds.
type Conflict struct { //nolint:errname // read as schema.Conflict, answered as 409; the name says what it is
	Detail string
}

func (e *Conflict) Error() string { return e.Detail }

// Unwrap returns store.ErrConflict.
func (e *Conflict) Unwrap() error { return store.ErrConflict }

// reject returns a *Rejection with one violation.
func reject(detail, pointer, msg string) *Rejection {
	return &Rejection{Detail: detail, Violations: []Violation{{Pointer: pointer, Message: msg}}}
}
