package destination

import (
	"fmt"
	"strings"
)

// Problem is one broken rule of a request body: an RFC 6901 JSON pointer
// and what is wrong there, as API.md's problem+json lists them.
type Problem struct {
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

// ValidationError is a destination that breaks rules: the API answers 422
// with its problems.
type ValidationError struct {
	Problems []Problem
}

// Error lists the problems.
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Pointer + ": " + p.Message
	}
	return "invalid destination: " + strings.Join(parts, "; ")
}

// invalid returns a *ValidationError of problems, or nil when there are
// none.
func invalid(problems []Problem) error {
	if len(problems) == 0 {
		return nil
	}
	return &ValidationError{Problems: problems}
}

// prefixed returns problems with prefix put before each pointer.
func prefixed(prefix string, problems []Problem) []Problem {
	out := make([]Problem, len(problems))
	for i, p := range problems {
		out[i] = Problem{Pointer: prefix + p.Pointer, Message: p.Message}
	}
	return out
}

// EscapePointer escapes a name for use as one token of a JSON pointer
// (RFC 6901: "~" as "~0", "/" as "~1").
func EscapePointer(name string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(name)
}

// problemf is a Problem with a formatted message.
func problemf(pointer, format string, args ...any) Problem {
	return Problem{Pointer: pointer, Message: fmt.Sprintf(format, args...)}
}
