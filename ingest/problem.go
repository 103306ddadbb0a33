package ingest

import (
	"fmt"
	"strings"
)

// Violation is one problem with a request, located by an RFC 6901 JSON
// pointer into the request body.
type Violation struct {
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

// Error is a rejection of an ingest request: the HTTP status it calls for
// and what is wrong. The api package renders it as problem+json.
type Error struct {
	// Status is 400, 408, 413, 415 or 422.
	Status int
	// Title is a short summary.
	Title string
	// Detail explains the problem for a person.
	Detail string
	// Violations locate the problems, empty when there is no location.
	Violations []Violation
}

func (e *Error) Error() string {
	if len(e.Violations) == 0 {
		return fmt.Sprintf("%d %s: %s", e.Status, e.Title, e.Detail)
	}
	parts := make([]string, 0, len(e.Violations))
	for _, v := range e.Violations {
		parts = append(parts, v.Pointer+": "+v.Message)
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Title, strings.Join(parts, "; "))
}

func badRequest(detail string, violations ...Violation) *Error {
	return &Error{Status: 400, Title: "Bad Request", Detail: detail, Violations: violations}
}

func unprocessable(detail string, violations ...Violation) *Error {
	return &Error{Status: 422, Title: "Unprocessable Entity", Detail: detail, Violations: violations}
}

func tooLarge(detail string, violations ...Violation) *Error {
	return &Error{Status: 413, Title: "Content Too Large", Detail: detail, Violations: violations}
}

// escapePointerToken escapes one reference token of a JSON pointer (RFC
// 6901: ~ as ~0, / as ~1).
func escapePointerToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
