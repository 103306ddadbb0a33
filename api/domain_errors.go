package api

import (
	"errors"

	"github.com/hooklane/hooklane/dispatch/pool"
	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/subscription"
	"github.com/hooklane/hooklane/subscription/replay"
)

// domainProblem maps the typed errors of the domain services the handlers
// call (schema.Catalog, subscription.Service, pools.Service) to the problem the client
// sees: a rejection is a 422 with its pointers, a conflict a 409, a
// missing event type or version a 404 naming it. ok is false for any
// other error.
func domainProblem(err error) (p *Problem, ok bool) {
	if cp, ok := clientProblem(err); ok {
		return cp, true
	}
	var (
		srej  *schema.Rejection
		sconf *schema.Conflict
		snf   *schema.NotFoundError
		rej   *subscription.Rejection
		conf  *subscription.Conflict
		prej  *pool.Rejection
		pconf *pool.Conflict
		rrej  *replay.Rejection
	)
	switch {
	case errors.As(err, &srej):
		errs := make([]FieldError, len(srej.Violations))
		for i, v := range srej.Violations {
			errs[i] = FieldError{Pointer: v.Pointer, Message: v.Message}
		}
		return unprocessable(srej.Detail, errs...), true
	case errors.As(err, &sconf):
		return conflict(sconf.Detail), true
	case errors.As(err, &snf):
		return notFound(snf.What), true
	case errors.As(err, &rej):
		return unprocessable(rej.Detail, fieldErrors(rej.Errors)...), true
	case errors.As(err, &conf):
		return conflict(conf.Detail), true
	case errors.As(err, &prej):
		errs := make([]FieldError, len(prej.Errors))
		for i, e := range prej.Errors {
			errs[i] = FieldError{Pointer: e.Pointer, Message: e.Message}
		}
		return unprocessable(prej.Detail, errs...), true
	case errors.As(err, &pconf):
		return conflict(pconf.Detail), true
	case errors.As(err, &rrej):
		errs := make([]FieldError, len(rrej.Errors))
		for i, e := range rrej.Errors {
			errs[i] = FieldError{Pointer: e.Pointer, Message: e.Message}
		}
		return unprocessable(rrej.Detail, errs...), true
	}
	return nil, false
}

// fieldErrors converts a subscription's field errors to the API's.
func fieldErrors(in []subscription.FieldError) []FieldError {
	out := make([]FieldError, len(in))
	for i, e := range in {
		out[i] = FieldError{Pointer: e.Pointer, Message: e.Message}
	}
	return out
}
