package subscription

import (
	"errors"
	"strings"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/subscription/transform"
)

// Transformation is a push subscription's JavaScript handler (API.md §16):
// its source and whether deliveries run it.
type Transformation struct {
	// Code is the JavaScript source defining function handler(webhook); at
	// most transform.MaxSourceBytes UTF-8 bytes.
	Code string `json:"code"`
	// Enabled says whether deliveries run the code; absent at create means
	// true (see normalizeTransformation), and a PATCH that leaves it out
	// keeps the stored value.
	Enabled *bool `json:"enabled"`
}

// On reports whether t is set and enabled: whether a delivery runs it.
func (t *Transformation) On() bool {
	return t != nil && (t.Enabled == nil || *t.Enabled)
}

// transformationPointer is where a transformation's code problems are
// reported.
const transformationPointer = "/transformation/code"

// normalizeTransformation gives an enabled flag to a transformation that
// names none (API.md §16: enabled defaults to true).
func (s *Subscription) normalizeTransformation() {
	if s.Transformation != nil && s.Transformation.Enabled == nil {
		on := true
		s.Transformation.Enabled = &on
	}
}

// validateTransformation checks the transformation: push delivery only, and
// code that compiles (transform.Compile: a syntax error, no handler or a
// source over 64 KiB is refused, the message naming the line and column).
func (s *Subscription) validateTransformation() []FieldError {
	t := s.Transformation
	switch {
	case t == nil:
		return nil
	case s.Delivery == dispatch.DeliveryPull:
		return []FieldError{{Pointer: "/transformation", Message: "applies to push delivery only"}}
	case strings.TrimSpace(t.Code) == "":
		return []FieldError{{Pointer: transformationPointer, Message: "is required"}}
	}
	if _, err := transform.Compile(t.Code); err != nil {
		if ce, ok := errors.AsType[*transform.CompileError](err); ok {
			return []FieldError{{Pointer: transformationPointer, Message: ce.Error()}}
		}
		return []FieldError{{Pointer: transformationPointer, Message: err.Error()}}
	}
	return nil
}

// rejectionDetail is the detail of a rejected subscription: a code that
// does not compile is named in it, with its line and column.
func rejectionDetail(errs []FieldError) string {
	for _, e := range errs {
		if e.Pointer == transformationPointer {
			return "the subscription is invalid: the transformation's code: " + e.Message
		}
	}
	return "the subscription is invalid"
}

// CloneTransformation returns a copy of t, so that a change to the copy
// leaves t as it is.
func CloneTransformation(t *Transformation) *Transformation {
	if t == nil {
		return nil
	}
	c := *t
	if t.Enabled != nil {
		on := *t.Enabled
		c.Enabled = &on
	}
	return &c
}
