package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/ingest"
	"github.com/hooklane/hooklane/store"
)

// ContentTypeProblem is the media type of every error answer (RFC 9457).
const ContentTypeProblem = "application/problem+json"

// retryAfterSeconds is the Retry-After sent with a 503: long enough for a
// store failover, short enough not to strand producers.
const retryAfterSeconds = 5

// FieldError is one located problem in a request body.
type FieldError = ingest.Violation

// Problem is an RFC 9457 problem document. It is also an error, so handlers
// can return it.
type Problem struct { //nolint:errname // RFC 9457 names it a problem, and so do API.md and every handler
	Type   string       `json:"type"`
	Title  string       `json:"title"`
	Status int          `json:"status"`
	Detail string       `json:"detail,omitempty"`
	Errors []FieldError `json:"errors,omitempty"`
}

func (p *Problem) Error() string { return fmt.Sprintf("%d %s: %s", p.Status, p.Title, p.Detail) }

func newProblem(status int, detail string, errs ...FieldError) *Problem {
	return &Problem{Type: problemType(status), Title: http.StatusText(status), Status: status, Detail: detail, Errors: errs}
}

func problemType(status int) string {
	return "https://hooklane.dev/problems/" + strings.ReplaceAll(strings.ToLower(http.StatusText(status)), " ", "-")
}

// Errors that handlers return for common answers.
func badRequest(detail string, errs ...FieldError) *Problem {
	return newProblem(http.StatusBadRequest, detail, errs...)
}

func unprocessable(detail string, errs ...FieldError) *Problem {
	return newProblem(http.StatusUnprocessableEntity, detail, errs...)
}

func notFound(what string) *Problem { return newProblem(http.StatusNotFound, what+" not found") }

func conflict(detail string) *Problem { return newProblem(http.StatusConflict, detail) }

// toProblem maps any handler error to the problem the client sees. Errors
// that are not the client's fault become a 500 (logged by the caller) or,
// for an unreachable store, a 503 with Retry-After.
func toProblem(err error) (*Problem, bool) {
	if p, ok := errors.AsType[*Problem](err); ok {
		return p, false
	}
	if dp, ok := domainProblem(err); ok {
		return dp, false
	}
	if ie, ok := errors.AsType[*ingest.Error](err); ok {
		out := newProblem(ie.Status, ie.Detail, ie.Violations...)
		out.Title = ie.Title
		return out, false
	}
	var te *dispatch.TransitionError
	switch {
	case errors.As(err, &te):
		return conflict(te.Error()), false
	case errors.Is(err, store.ErrNotFound):
		return newProblem(http.StatusNotFound, "the resource does not exist"), false
	case errors.Is(err, store.ErrConflict):
		return conflict("the resource conflicts with an existing one or changed meanwhile"), false
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, store.ErrClosed):
		return newProblem(http.StatusServiceUnavailable, "the store is unavailable; retry later"), false
	}
	return newProblem(http.StatusInternalServerError, "internal error"), true
}

// writeProblem writes p as problem+json.
func writeProblem(c *gin.Context, p *Problem) {
	if p.Status == http.StatusServiceUnavailable {
		c.Header("Retry-After", strconv.Itoa(retryAfterSeconds))
	}
	b, err := json.Marshal(p)
	if err != nil {
		b = []byte(`{"title":"Internal Server Error","status":500}`)
	}
	c.Data(p.Status, ContentTypeProblem, b)
}

// notFoundOr turns store.ErrNotFound into a 404 naming what is missing and
// passes any other error on.
func (s *Server) notFoundOr(err error, what string) error {
	if errors.Is(err, store.ErrNotFound) {
		return notFound(what)
	}
	return err
}

func isConflict(err error) bool { return errors.Is(err, store.ErrConflict) }
