package schema

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// Bounds on the JSON numbers the JSON Schema validator is given, in event
// data and in schemas. The validator compares numbers exactly as big.Rat
// values: an exponent of a million costs it tens of milliseconds per
// keyword (minimum, multipleOf, type integer, enum, …), and past that
// big.Rat gives up and the validator dereferences nil (a panic). Real
// numbers are far inside both bounds: a float64 spans 1e-324 to 1e308 with
// 17 significant digits, and a 256-bit integer has 78 digits.
const (
	// MaxNumberDigits is the most digits a number may write before its
	// exponent (integer and fraction parts together).
	MaxNumberDigits = 100
	// MaxNumberExponent is the largest exponent, in absolute value, a
	// number may write (the n of 1e±n).
	MaxNumberExponent = 400
)

// maxNumberViolations bounds the violations one document's numbers report:
// a megabyte of huge numbers needs no megabyte of answer.
const maxNumberViolations = 10

// checkNumber returns nil when the JSON number literal n is within
// MaxNumberDigits and MaxNumberExponent, else why not.
func checkNumber(n string) error {
	i := 0
	if i < len(n) && n[i] == '-' {
		i++
	}
	digits := 0
	for ; i < len(n) && n[i] != 'e' && n[i] != 'E'; i++ {
		if n[i] != '.' {
			digits++
		}
	}
	if digits > MaxNumberDigits {
		return fmt.Errorf("has %d digits; at most %d are accepted", digits, MaxNumberDigits)
	}
	if i == len(n) {
		return nil
	}
	i++ // e or E
	if i < len(n) && (n[i] == '+' || n[i] == '-') {
		i++
	}
	exp := 0
	for ; i < len(n); i++ {
		exp = exp*10 + int(n[i]-'0')
		if exp > MaxNumberExponent {
			return fmt.Errorf("has an exponent beyond ±%d", MaxNumberExponent)
		}
	}
	return nil
}

// hasBadNumber reports whether a document decoded by
// jsonschema.UnmarshalJSON (numbers as json.Number) holds a number out of
// bounds. It allocates nothing: it runs on every validated event.
func hasBadNumber(v any) bool {
	switch x := v.(type) {
	case json.Number:
		return checkNumber(string(x)) != nil
	case []any:
		if slices.ContainsFunc(x, hasBadNumber) {
			return true
		}
	case map[string]any:
		for _, item := range x {
			if hasBadNumber(item) {
				return true
			}
		}
	}
	return false
}

// numberViolations returns a violation for each number of doc out of
// bounds, at most maxNumberViolations, located by prefix and its path;
// nil when there is none. Object members are visited in name order, so the
// answer is stable.
func numberViolations(doc any, prefix string) []Violation {
	if !hasBadNumber(doc) {
		return nil
	}
	var out []Violation
	var walk func(v any, loc []string)
	walk = func(v any, loc []string) {
		if len(out) >= maxNumberViolations {
			return
		}
		switch x := v.(type) {
		case json.Number:
			if err := checkNumber(string(x)); err != nil {
				out = append(out, Violation{Pointer: Pointer(prefix, loc), Message: "number " + abbreviate(string(x)) + " " + err.Error()})
			}
		case []any:
			for i, item := range x {
				walk(item, append(loc, strconv.Itoa(i)))
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(x[k], append(loc, k))
			}
		}
	}
	walk(doc, nil)
	return out
}

// abbreviate shortens a long number literal for a message.
func abbreviate(n string) string {
	if len(n) <= 40 {
		return n
	}
	return n[:20] + "…" + n[len(n)-12:]
}
