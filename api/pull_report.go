package api

import (
	"fmt"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds on what a pull worker reports (API.md §10). A report is written
// into the job's audit trail, its status events and GET /api/workers, so
// its values are bounded like any other input.
const (
	// workerIDMaxLength is the longest worker id: "{hostname}:{pid}" with
	// the longest DNS name (253) fits.
	workerIDMaxLength = 256
	// executionTimeMaxMs is the longest execution a report may claim, one
	// day: an attempt is held by a lease that heartbeats renew, but one
	// reported as running longer is a unit mistake (seconds for
	// milliseconds), and a value near the int64 limit overflows the
	// attempt's start time.
	executionTimeMaxMs = 24 * 60 * 60 * 1000
	// errorMessageMaxBytes is how much of a failure's message is kept, as
	// responseBody keeps the first KiB of a push answer: a worker sending
	// its whole stack trace is truncated, not refused (its job would then
	// wait for the lease to expire).
	errorMessageMaxBytes = 4096
)

// checkWorkerID checks the worker id named name (the body member
// "workerId", or the claim's query parameter "worker_id"): nil, or the
// problem to answer — 400 when it is missing, 422 when it breaks a rule.
// A body member's problem points at it.
func checkWorkerID(id, name string) *Problem {
	var status int
	var msg string
	switch {
	case strings.TrimSpace(id) == "":
		status, msg = http.StatusBadRequest, "is required"
	case len(id) > workerIDMaxLength:
		status, msg = http.StatusUnprocessableEntity, fmt.Sprintf("must be at most %d bytes", workerIDMaxLength)
	case strings.ContainsFunc(id, unicode.IsControl):
		status, msg = http.StatusUnprocessableEntity, "must not contain control characters"
	default:
		return nil
	}
	if name == "worker_id" {
		return newProblem(status, name+" "+msg)
	}
	return newProblem(status, name+" "+msg, FieldError{Pointer: "/" + name, Message: msg})
}

// checkReport checks the body of /complete and /fail: a worker id (see
// checkWorkerID), executionTimeMs between 0 and a day, statusCode absent
// (0) or an HTTP status (100–599). It returns nil or the problem to answer,
// with every field at fault. It keeps the first errorMessageMaxBytes of
// errorMessage.
func checkReport(in *reportInput) error {
	var errs []FieldError
	if p := checkWorkerID(in.WorkerID, "workerId"); p != nil {
		if p.Status == http.StatusBadRequest {
			return p
		}
		errs = append(errs, p.Errors...)
	}
	if in.ExecutionTimeMs < 0 || in.ExecutionTimeMs > executionTimeMaxMs {
		errs = append(errs, FieldError{Pointer: "/executionTimeMs", Message: fmt.Sprintf("must be between 0 and %d (one day)", executionTimeMaxMs)})
	}
	if in.StatusCode != 0 && (in.StatusCode < 100 || in.StatusCode > 599) {
		errs = append(errs, FieldError{Pointer: "/statusCode", Message: "must be an HTTP status code (100–599), or absent"})
	}
	if len(errs) > 0 {
		return unprocessable("the report is invalid", errs...)
	}
	in.ErrorMessage = truncateUTF8(in.ErrorMessage, errorMessageMaxBytes)
	return nil
}

// truncateUTF8 returns the longest prefix of s of at most n bytes that
// does not split a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
