package cloudevent

import (
	"errors"
	"fmt"
	"strings"
)

// The W3C Trace Context checks below are written here rather than taken
// from OpenTelemetry: the gateway forwards the two values unchanged and only
// needs to know that a receiver's tracing library will not discard them;
// the otel propagator answers that only through a context and a span,
// and would add a dependency tree to this leaf package.

// traceStateMaxMembers is the most list-members a tracestate may hold (W3C
// Trace Context §3.3.1.1).
const traceStateMaxMembers = 32

// CheckTraceParent returns nil when s is a W3C Trace Context traceparent
// (https://www.w3.org/TR/trace-context/#traceparent-header): version,
// trace-id, parent-id and trace-flags as lower-case hex, joined by "-"; the
// ids not all zeros; version ff invalid; version 00 exactly 55 characters,
// a later version at least that with anything after a further "-".
func CheckTraceParent(s string) error {
	const v0Len = 55 // 2 + 1 + 32 + 1 + 16 + 1 + 2
	if len(s) < v0Len {
		return errors.New("must be a W3C traceparent: version-traceid-parentid-flags, e.g. 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	}
	version, traceID, parentID, flags := s[0:2], s[3:35], s[36:52], s[53:55]
	switch {
	case s[2] != '-' || s[35] != '-' || s[52] != '-':
		return errors.New("must be a W3C traceparent: version-traceid-parentid-flags separated by '-'")
	case !lowerHex(version) || version == "ff":
		return errors.New("must be a W3C traceparent: the version must be two lower-case hex digits, not ff")
	case !lowerHex(traceID) || allZeros(traceID):
		return errors.New("must be a W3C traceparent: the trace-id must be 32 lower-case hex digits, not all zeros")
	case !lowerHex(parentID) || allZeros(parentID):
		return errors.New("must be a W3C traceparent: the parent-id must be 16 lower-case hex digits, not all zeros")
	case !lowerHex(flags):
		return errors.New("must be a W3C traceparent: the trace-flags must be two lower-case hex digits")
	case version == "00" && len(s) != v0Len:
		return fmt.Errorf("must be a W3C traceparent: version 00 is exactly %d characters", v0Len)
	case len(s) > v0Len && s[v0Len] != '-':
		return errors.New("must be a W3C traceparent: fields of a later version follow a '-'")
	}
	return nil
}

// CheckTraceState returns nil when s is a W3C Trace Context tracestate
// (https://www.w3.org/TR/trace-context/#tracestate-header): at most 32
// comma-separated key=value list-members (empty ones and optional spaces or
// tabs around them allowed), keys of lower-case letters, digits and _-*/
// with an optional tenant@system form, values of printable ASCII without
// ',' and '=' and not ending in a space.
func CheckTraceState(s string) error {
	members := 0
	for m := range strings.SplitSeq(s, ",") {
		m = strings.Trim(m, " \t")
		if m == "" {
			continue
		}
		members++
		if members > traceStateMaxMembers {
			return fmt.Errorf("must be a W3C tracestate: at most %d list-members", traceStateMaxMembers)
		}
		key, value, ok := strings.Cut(m, "=")
		if !ok {
			return fmt.Errorf("must be a W3C tracestate: list-member %q is not key=value", m)
		}
		if !traceStateKey(key) {
			return fmt.Errorf("must be a W3C tracestate: key %q must be lower-case letters, digits and _-*/ (tenant@system allowed)", key)
		}
		if !traceStateValue(value) {
			return fmt.Errorf("must be a W3C tracestate: the value of %q must be 1 to 256 printable ASCII characters without ',' or '=', not ending in a space", key)
		}
	}
	return nil
}

// traceStateKey: simple-key = lcalpha 0*255(keychar); multi-tenant-key =
// tenant-id "@" system-id, tenant-id = (lcalpha / DIGIT) 0*240(keychar),
// system-id = lcalpha 0*13(keychar).
func traceStateKey(k string) bool {
	tenant, system, multi := strings.Cut(k, "@")
	if !multi {
		return len(k) >= 1 && len(k) <= 256 && isLowerAlpha(k[0]) && keyChars(k[1:])
	}
	return len(tenant) >= 1 && len(tenant) <= 241 && (isLowerAlpha(tenant[0]) || isDigit(tenant[0])) && keyChars(tenant[1:]) &&
		len(system) >= 1 && len(system) <= 14 && isLowerAlpha(system[0]) && keyChars(system[1:])
}

func keyChars(s string) bool {
	for i := range len(s) {
		c := s[i]
		if !isLowerAlpha(c) && !isDigit(c) && c != '_' && c != '-' && c != '*' && c != '/' {
			return false
		}
	}
	return true
}

// traceStateValue: value = 0*255(chr) nblk-chr; chr = %x20 / nblk-chr;
// nblk-chr = %x21-2B / %x2D-3C / %x3E-7E.
func traceStateValue(v string) bool {
	if len(v) < 1 || len(v) > 256 || v[len(v)-1] == ' ' {
		return false
	}
	for i := range len(v) {
		if c := v[i]; c < 0x20 || c > 0x7e || c == ',' || c == '=' {
			return false
		}
	}
	return true
}

func lowerHex(s string) bool {
	for i := range len(s) {
		if c := s[i]; !isDigit(c) && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func allZeros(s string) bool { return strings.Trim(s, "0") == "" }

func isLowerAlpha(c byte) bool { return c >= 'a' && c <= 'z' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
