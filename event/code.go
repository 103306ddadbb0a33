package event

import (
	"errors"
	"fmt"
	"strings"
)

// Limits of event type codes (API.md §2).
const (
	// TypeCodeSegmentsMin is the fewest segments an event type code has.
	TypeCodeSegmentsMin = 2
	// TypeCodeSegmentsMax is the most segments an event type code has.
	TypeCodeSegmentsMax = 8
)

// TypeWildcard is the pattern segment that stands for one segment, or, in last
// position, for one or more segments.
const TypeWildcard = "*"

// ValidateTypeCode reports whether code is a valid event type code: 2–8
// segments of [a-z0-9_-]+ joined by ':' or by '.', one separator kind per
// code (`ecommerce:orders:order:created`, `order.created`). The error says
// what is wrong, for a person.
func ValidateTypeCode(code string) error {
	_, _, err := parseCode(code)
	return err
}

// parseCode validates code and returns its separator and segments.
func parseCode(code string) (sep byte, segs []string, err error) {
	sep, err = TypeSeparatorOf(code)
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

// ValidateTypePattern reports whether p is a valid binding pattern: an exact
// event type code, or a code in which some segments are `*`. A `*` in the
// last position is a prefix glob (`ecommerce:orders:*` matches the codes that
// start with `ecommerce:orders:`, not `ecommerce:orders` itself); any other
// `*` stands for exactly one segment (`ecommerce:*:order:created`). Both kinds
// combine (`ecommerce:*:order:*`). A `*` must be a whole segment (`order*` is
// refused), and the segment count obeys the code rules.
func ValidateTypePattern(p string) error {
	sep, err := TypeSeparatorOf(p)
	if err != nil {
		return err
	}
	segs := strings.Split(p, string(sep))
	if err := checkSegmentCount(len(segs)); err != nil {
		return err
	}
	for i, s := range segs {
		if s == TypeWildcard {
			continue
		}
		if strings.Contains(s, TypeWildcard) {
			return fmt.Errorf("segment %d %q: '*' must stand for a whole segment", i+1, s)
		}
		if !validSegment(s) {
			return fmt.Errorf("segment %d %q must be '*' or one or more of a-z, 0-9, '_' and '-'", i+1, s)
		}
	}
	return nil
}

// MatchTypePattern reports whether the event type code matches pattern under
// the rules of [ValidateTypePattern]. A pattern matches only codes written with
// its own separator. An invalid pattern or code matches only when the two
// strings are equal.
func MatchTypePattern(pattern, code string) bool {
	if pattern == code {
		return true
	}
	if ValidateTypePattern(pattern) != nil {
		return false
	}
	sep, segs, ok := SplitTypeCode(code)
	if !ok || !strings.ContainsRune(pattern, rune(sep)) {
		return false
	}
	return matchSegments(strings.Split(pattern, string(sep)), segs)
}

// matchSegments matches pattern segments against code segments.
func matchSegments(pat, code []string) bool {
	for i, p := range pat {
		last := i == len(pat)-1
		if last && p == TypeWildcard {
			// Prefix glob: at least one more segment.
			return len(code) > i
		}
		if i >= len(code) {
			return false
		}
		if p != TypeWildcard && p != code[i] {
			return false
		}
	}
	return len(code) == len(pat)
}

// IsTypePattern reports whether a (valid) binding code contains a TypeWildcard.
func IsTypePattern(p string) bool { return strings.Contains(p, TypeWildcard) }

// SplitTypeCode splits a valid event type code into its separator and segments;
// ok is false when code is not a valid code.
func SplitTypeCode(code string) (sep byte, segs []string, ok bool) {
	sep, segs, err := parseCode(code)
	return sep, segs, err == nil
}

// TypeSeparatorOf returns the one separator kind used in s.
func TypeSeparatorOf(s string) (byte, error) {
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
		return 0, fmt.Errorf("must have %d to %d segments joined by ':' or '.'", TypeCodeSegmentsMin, TypeCodeSegmentsMax)
	}
}

func checkSegmentCount(n int) error {
	if n < TypeCodeSegmentsMin || n > TypeCodeSegmentsMax {
		return fmt.Errorf("must have %d to %d segments, has %d", TypeCodeSegmentsMin, TypeCodeSegmentsMax, n)
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
