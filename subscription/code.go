package subscription

import (
	"errors"
	"fmt"
	"strings"
)

// Limits of event type codes (API.md §2).
const (
	// CodeSegmentsMin is the fewest segments an event type code has.
	CodeSegmentsMin = 2
	// CodeSegmentsMax is the most segments an event type code has.
	CodeSegmentsMax = 8
)

// wildcard is the pattern segment that stands for one segment, or, in last
// position, for one or more segments.
const wildcard = "*"

// ValidateEventTypeCode reports whether code is a valid event type code: 2–8
// segments of [a-z0-9_-]+ joined by ':' or by '.', one separator kind per
// code (`ecommerce:orders:order:created`, `order.created`). The error says
// what is wrong, for a person.
func ValidateEventTypeCode(code string) error {
	_, _, err := parseCode(code)
	return err
}

// parseCode validates code and returns its separator and segments.
func parseCode(code string) (sep byte, segs []string, err error) {
	sep, err = separatorOf(code)
	if err != nil {
		return 0, nil, err
	}
	segs = strings.Split(code, string(sep))
	if err := checkSegmentCount(len(segs)); err != nil {
		return 0, nil, err
	}
	for i, s := range segs {
		if !validSegment(s) {
			return 0, nil, fmt.Errorf("segment %d %q must be one or more of a-z, 0-9, '_' and '-'", i+1, s)
		}
	}
	return sep, segs, nil
}

// ValidatePattern reports whether p is a valid binding pattern: an exact
// event type code, or a code in which some segments are `*`. A `*` in the
// last position is a prefix glob (`ecommerce:orders:*` matches the codes that
// start with `ecommerce:orders:`, not `ecommerce:orders` itself); any other
// `*` stands for exactly one segment (`ecommerce:*:order:created`). Both kinds
// combine (`ecommerce:*:order:*`). A `*` must be a whole segment (`order*` is
// refused), and the segment count obeys the code rules.
func ValidatePattern(p string) error {
	sep, err := separatorOf(p)
	if err != nil {
		return err
	}
	segs := strings.Split(p, string(sep))
	if err := checkSegmentCount(len(segs)); err != nil {
		return err
	}
	for i, s := range segs {
		if s == wildcard {
			continue
		}
		if strings.Contains(s, wildcard) {
			return fmt.Errorf("segment %d %q: '*' must stand for a whole segment", i+1, s)
		}
		if !validSegment(s) {
			return fmt.Errorf("segment %d %q must be '*' or one or more of a-z, 0-9, '_' and '-'", i+1, s)
		}
	}
	return nil
}

// MatchPattern reports whether the event type code matches pattern under
// the rules of [ValidatePattern]. A pattern matches only codes written with
// its own separator. An invalid pattern or code matches only when the two
// strings are equal.
func MatchPattern(pattern, code string) bool {
	if pattern == code {
		return true
	}
	if ValidatePattern(pattern) != nil {
		return false
	}
	sep, segs, ok := splitCode(code)
	if !ok || !strings.ContainsRune(pattern, rune(sep)) {
		return false
	}
	return matchSegments(strings.Split(pattern, string(sep)), segs)
}

// matchSegments matches pattern segments against code segments.
func matchSegments(pat, code []string) bool {
	for i, p := range pat {
		last := i == len(pat)-1
		if last && p == wildcard {
			// Prefix glob: at least one more segment.
			return len(code) > i
		}
		if i >= len(code) {
			return false
		}
		if p != wildcard && p != code[i] {
			return false
		}
	}
	return len(code) == len(pat)
}

// isPattern reports whether a (valid) binding code contains a wildcard.
func isPattern(p string) bool { return strings.Contains(p, wildcard) }

// splitCode splits a valid event type code into its separator and segments;
// ok is false when code is not a valid code.
func splitCode(code string) (sep byte, segs []string, ok bool) {
	sep, segs, err := parseCode(code)
	return sep, segs, err == nil
}

// separatorOf returns the one separator kind used in s.
func separatorOf(s string) (byte, error) {
	if s == "" {
		return 0, errors.New("is required")
	}
	hasColon, hasDot := strings.Contains(s, ":"), strings.Contains(s, ".")
	switch {
	case hasColon && hasDot:
		return 0, errors.New("must use one separator kind, ':' or '.', not both")
	case hasColon:
		return ':', nil
	case hasDot:
		return '.', nil
	default:
		return 0, fmt.Errorf("must have %d to %d segments joined by ':' or '.'", CodeSegmentsMin, CodeSegmentsMax)
	}
}

func checkSegmentCount(n int) error {
	if n < CodeSegmentsMin || n > CodeSegmentsMax {
		return fmt.Errorf("must have %d to %d segments, has %d", CodeSegmentsMin, CodeSegmentsMax, n)
	}
	return nil
}

func validSegment(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}
