package tenant

import (
	"fmt"
	"net/http"

	"github.com/hooklane/hooklane/store"
)

// Rejection is a request that breaks a rule of API.md §11: Status is the
// HTTP status it is answered with (422 for a bad value, 403 for a client
// the caller may not name), Pointer the RFC 6901 pointer into the request
// body ("" when none).
type Rejection struct { //nolint:errname // read as client.Rejection; the name says what it is
	Status  int
	Pointer string
	Detail  string
}

func (e *Rejection) Error() string {
	if e.Pointer == "" {
		return e.Detail
	}
	return e.Pointer + ": " + e.Detail
}

// Conflict is a client id that is already taken.
type Conflict struct { //nolint:errname // read as client.Conflict, answered as 409
	Detail string
}

func (e *Conflict) Error() string { return e.Detail }

// Unwrap returns store.ErrConflict.
func (e *Conflict) Unwrap() error { return store.ErrConflict }

// Unauthorized is a token that is unknown, expired or revoked, or whose
// client does not exist: API.md §11 answers it 401.
type Unauthorized struct { //nolint:errname // answered as 401
	Detail string
}

func (e *Unauthorized) Error() string { return e.Detail }

// reject is a 422 at pointer.
func reject(pointer, format string, args ...any) *Rejection {
	return &Rejection{Status: http.StatusUnprocessableEntity, Pointer: pointer, Detail: fmt.Sprintf(format, args...)}
}
