package api

import (
	"errors"

	"github.com/hooklane/hooklane/stream"
)

// filterProblem maps a *stream.FilterError to its 422; other errors pass.
func filterProblem(err error) error {
	fe, ok := errors.AsType[*stream.FilterError](err)
	if !ok {
		return err
	}
	if fe.Param == "" {
		return unprocessable(fe.Detail)
	}
	return unprocessable(fe.Detail, FieldError{Pointer: "", Message: "query parameter " + fe.Detail})
}
