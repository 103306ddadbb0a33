// The header-field checks: what the gateway will send as HTTP header fields
// (RFC 9110 §5): the names and values that producers, operators and workers
// hand it and that go out later on every delivery — the attributes of an
// event (ce-* headers in CloudEvents binary mode, traceparent and
// tracestate), a subscription's or a TASK job's custom headers.
//
// A value that cannot be sent fails every delivery attempt of its job, and a
// failing job holds its whole message group in BLOCK_ON_ERROR mode, so such a
// value must be refused when it comes in, not when it goes out. The rules
// are exactly those net/http's client applies before it sends a request
// (golang.org/x/net/http/httpguts), so a value accepted here is one the
// router can send.

package cloudevent

import (
	"errors"
	"fmt"

	"golang.org/x/net/http/httpguts"
)

// ValidHeaderName reports whether name is a valid header field name: a non-empty
// RFC 9110 token (letters, digits and !#$%&'*+-.^_`|~).
func ValidHeaderName(name string) bool { return httpguts.ValidHeaderFieldName(name) }

// CheckHeaderName returns nil when name is a valid header field name, else an
// error saying why, for a person (it completes "the name …").
func CheckHeaderName(name string) error {
	if name == "" {
		return errors.New("must not be empty")
	}
	if !ValidHeaderName(name) {
		return errors.New("must be a valid HTTP header name: letters, digits and !#$%&'*+-.^_`|~")
	}
	return nil
}

// CheckHeaderValue returns nil when v can be sent as a header field value, else
// an error naming the first byte that cannot (it completes "the value …").
// Control characters are refused — CR, LF and NUL among them — except the
// horizontal tab; bytes from 0x80 up (UTF-8 text) are allowed, as RFC
// 9110's obs-text and net/http allow them.
func CheckHeaderValue(v string) error {
	if httpguts.ValidHeaderFieldValue(v) {
		return nil
	}
	for i := range len(v) {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return fmt.Errorf("must not contain control characters (U+%04X at byte %d): it is sent as an HTTP header", c, i)
		}
	}
	// Unreachable while httpguts refuses exactly the bytes above; kept so a
	// stricter httpguts still yields an error, not a silent pass.
	return errors.New("cannot be sent as an HTTP header value")
}
