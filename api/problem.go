package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
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

// decodeJSON reads a JSON request body into dst. A body not declared JSON
// is a 415 (requireJSON, api/guard.go); malformed JSON is a 400; a value of
// the wrong type is a 422 pointing at it.
func decodeJSON(r *http.Request, dst any, maxBytes int64) error {
	if err := requireJSON(r); err != nil {
		return err
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBytes+1))
	if err != nil {
		return badRequest("the request body could not be read")
	}
	if int64(len(body)) > maxBytes {
		return newProblem(http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body exceeds %d bytes", maxBytes))
	}
	if !json.Valid(body) {
		return badRequest("the body is not well-formed JSON", FieldError{Pointer: "", Message: "malformed JSON"})
	}
	if string(bytes.TrimSpace(body)) == "null" && wantsObject(dst) {
		// json.Unmarshal takes null as "nothing to do"; a body that must be
		// an object breaks that rule (422, as any other non-object does).
		return unprocessable("a field has the wrong type", FieldError{Pointer: "", Message: "must be an object"})
	}
	if ce, err := memberCase(body, reflect.TypeOf(dst)); err == nil && ce != nil {
		// encoding/json would take the member for ce.want (strict_json.go).
		return unprocessable("member names are case-sensitive", FieldError{
			Pointer: ce.pointer,
			Message: "unknown member: names are case-sensitive (did you mean " + ce.want + "?)",
		})
	}
	if err := json.Unmarshal(body, dst); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			ptr, found := pointerAt(body, te.Offset)
			if !found {
				ptr = "/" + strings.ReplaceAll(te.Field, ".", "/")
				if te.Field == "" {
					ptr = ""
				}
			}
			return unprocessable("a field has the wrong type", FieldError{Pointer: ptr, Message: "must be " + jsonKind(te.Type.Kind().String())})
		}
		return unprocessable(err.Error(), FieldError{Pointer: "", Message: err.Error()})
	}
	return nil
}

// pointerAt returns the JSON pointer of the innermost value of the
// document body that ends at or spans offset: where json.Unmarshal reports a
// value of the wrong type. (UnmarshalTypeError.Field names Go's embedded
// structs and leaves out array indexes, so it is no pointer into the body.)
func pointerAt(body []byte, offset int64) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	ptr, found, err := valuePointer(dec, "", offset)
	if err != nil {
		return "", false
	}
	return ptr, found
}

// valuePointer reads one JSON value from dec, whose pointer is path, and
// reports the pointer of its innermost value that spans offset.
func valuePointer(dec *json.Decoder, path string, offset int64) (string, bool, error) {
	start := dec.InputOffset()
	tok, err := dec.Token()
	if err != nil {
		return "", false, fmt.Errorf("read token: %w", err)
	}
	switch tok {
	case json.Delim('{'):
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return "", false, fmt.Errorf("read key: %w", err)
			}
			name, _ := key.(string)
			if ptr, found, err := valuePointer(dec, path+"/"+pointerToken(name), offset); err != nil || found {
				return ptr, found, err
			}
		}
		if _, err := dec.Token(); err != nil {
			return "", false, fmt.Errorf("read object end: %w", err)
		}
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if ptr, found, err := valuePointer(dec, path+"/"+strconv.Itoa(i), offset); err != nil || found {
				return ptr, found, err
			}
		}
		if _, err := dec.Token(); err != nil {
			return "", false, fmt.Errorf("read array end: %w", err)
		}
	}
	return path, start < offset && offset <= dec.InputOffset(), nil
}

// pointerToken escapes one reference token of a JSON pointer (RFC
// 6901: ~ as ~0, / as ~1).
func pointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// wantsObject reports whether dst points to a struct or a map: a value
// only a JSON object decodes into.
func wantsObject(dst any) bool {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer {
		return false
	}
	k := v.Type().Elem().Kind()
	return k == reflect.Struct || k == reflect.Map
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int64", "int32", "float64", "float32", "uint", "uint64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	}
	return "of another type"
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

// reDecode decodes an already parsed JSON object into dst, reporting a
// member of the wrong type as a 422 pointing at it.
func reDecode(raw map[string]any, dst any) error {
	b, err := json.Marshal(raw)
	if err != nil {
		return fmt.Errorf("re-encode body: %w", err)
	}
	r, _ := http.NewRequest(http.MethodPost, "/", strings.NewReader(string(b))) //nolint:noctx // in-memory body only
	r.Header.Set("Content-Type", "application/json")
	return decodeJSON(r, dst, int64(len(b))+1)
}
