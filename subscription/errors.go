package subscription

import "github.com/hooklane/hooklane/store"

// Rejection is a subscription (or a secret) the Service refuses as
// written (the API answers 422): Errors locate each problem in the
// request body. Detail sums it up for a person.
type Rejection struct { //nolint:errname // read as subscription.Rejection, answered as 422; the name says what it is
	Detail string
	Errors []FieldError
}

func (e *Rejection) Error() string {
	if len(e.Errors) == 0 {
		return e.Detail
	}
	return e.Detail + ": " + e.Errors[0].Error()
}

// Conflict is a write the stored subscriptions refuse (the API answers
// 409): another subscription of the same client has the code. It wraps
// store.ErrConflict, so errors.Is(err, store.ErrConflict) holds.
type Conflict struct { //nolint:errname // read as subscription.Conflict, answered as 409; the name says what it is
	Detail string
}

func (e *Conflict) Error() string { return e.Detail }

// Unwrap returns store.ErrConflict.
func (e *Conflict) Unwrap() error { return store.ErrConflict }
