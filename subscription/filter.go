package subscription

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/hooklane/hooklane/event/cloudevent"
)

// Filter operators (API.md §3).
const (
	OpEq     = "eq"
	OpNeq    = "neq"
	OpIn     = "in"
	OpPrefix = "prefix"
	OpSuffix = "suffix"
	OpExists = "exists"
	OpGt     = "gt"
	OpGte    = "gte"
	OpLt     = "lt"
	OpLte    = "lte"
)

// dataPrefix starts a field that addresses the event's JSON data.
const dataPrefix = "data."

// maxAttributeName is the longest attribute or extension name a filter may
// name; the CloudEvents spec recommends at most 20 characters, and the
// gateway accepts extension names up to 64.
const maxAttributeName = 64

// kind is the JSON type of a value.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// operand is a filter's JSON value, decoded once at compile time.
type operand struct {
	kind kind
	b    bool
	s    string
	n    decimal
	// v is the decoded value (json.Number for numbers) for deep equality
	// of arrays and objects.
	v any
}

// compiledFilter is a Filter parsed once: its path split, its operand
// decoded and, for in over strings, a set built.
type compiledFilter struct {
	// attr is the attribute or extension name; empty for a data field.
	attr string
	// path is the data path; nil for an attribute field.
	path  []string
	op    string
	val   operand
	list  []operand
	set   map[string]struct{}
	exist bool
}

// filterError is a problem with one part ("field", "op" or "value") of a
// filter.
type filterError struct {
	part, msg string
}

func (e *filterError) Error() string { return e.part + ": " + e.msg }

// compileFilter checks f and compiles it. The error is a *filterError.
func compileFilter(f Filter) (compiledFilter, error) {
	var cf compiledFilter
	switch {
	case strings.HasPrefix(f.Field, dataPrefix):
		cf.path = strings.Split(strings.TrimPrefix(f.Field, dataPrefix), ".")
		if slices.Contains(cf.path, "") {
			return cf, &filterError{"field", "data path segments must not be empty"}
		}
	case f.Field == "":
		return cf, &filterError{"field", "is required"}
	case f.Field == "data" || f.Field == "data_base64":
		return cf, &filterError{"field", "must be an attribute or extension name, or data.<path>"}
	default:
		if !validAttributeName(f.Field) {
			return cf, &filterError{"field", "attribute and extension names are 1 to 64 lower-case letters and digits; use data.<path> for the data"}
		}
		cf.attr = f.Field
	}
	cf.op = f.Op
	// The op is checked first: a filter with an unknown op and no value is
	// wrong in its op, which is what the error should point at.
	switch f.Op {
	case OpEq, OpNeq, OpIn, OpPrefix, OpSuffix, OpExists, OpGt, OpGte, OpLt, OpLte:
	case "":
		return cf, &filterError{"op", "is required"}
	default:
		return cf, &filterError{"op", "must be one of eq, neq, in, prefix, suffix, exists, gt, gte, lt, lte"}
	}
	if len(bytes.TrimSpace(f.Value)) == 0 {
		return cf, &filterError{"value", "is required"}
	}
	val, err := decodeOperand(f.Value)
	if err != nil {
		return cf, &filterError{"value", "must be a JSON value"}
	}
	switch f.Op {
	case OpEq, OpNeq:
		cf.val = val
	case OpIn:
		if val.kind != kindArray {
			return cf, &filterError{"value", "must be an array for op in"}
		}
		items, _ := val.v.([]any)
		cf.list = make([]operand, len(items))
		allStrings := true
		for i, it := range items {
			cf.list[i] = operandOf(it)
			allStrings = allStrings && cf.list[i].kind == kindString
		}
		if allStrings {
			cf.set = make(map[string]struct{}, len(items))
			for _, o := range cf.list {
				cf.set[o.s] = struct{}{}
			}
		}
	case OpPrefix, OpSuffix:
		if val.kind != kindString {
			return cf, &filterError{"value", "must be a string for op " + f.Op}
		}
		cf.val = val
	case OpExists:
		if val.kind != kindBool {
			return cf, &filterError{"value", "must be a boolean for op exists"}
		}
		cf.exist = val.b
	case OpGt, OpGte, OpLt, OpLte:
		if val.kind != kindNumber && val.kind != kindString {
			return cf, &filterError{"value", "must be a number or a string for op " + f.Op}
		}
		cf.val = val
	}
	return cf, nil
}

func validAttributeName(s string) bool {
	if s == "" || len(s) > maxAttributeName {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// decodeJSON decodes one JSON value keeping numbers exact (json.Number).
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err //nolint:wrapcheck // callers turn it into a message
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

func decodeOperand(raw json.RawMessage) (operand, error) {
	v, err := decodeJSON(raw)
	if err != nil {
		return operand{}, err
	}
	return operandOf(v), nil
}

// operandOf classifies a value decoded by decodeJSON.
func operandOf(v any) operand {
	switch x := v.(type) {
	case bool:
		return operand{kind: kindBool, b: x, v: v}
	case string:
		return operand{kind: kindString, s: x, v: v}
	case json.Number:
		d, _ := parseDecimal(string(x))
		return operand{kind: kindNumber, n: d, v: v}
	case []any:
		return operand{kind: kindArray, v: v}
	case map[string]any:
		return operand{kind: kindObject, v: v}
	default:
		return operand{kind: kindNull}
	}
}

// eventView gives filters the fields of one event; the data is decoded at
// most once, on the first data.* field asked for.
type eventView struct {
	ev      *cloudevent.Event
	decoded bool
	data    any
	hasData bool
}

func (v *eventView) field(f *compiledFilter) (any, bool) {
	if f.path == nil {
		return v.ev.Attribute(f.attr)
	}
	if !v.decoded {
		v.decoded = true
		if v.ev.Data != nil {
			d, err := decodeJSON(v.ev.Data)
			v.data, v.hasData = d, err == nil
		}
	}
	if !v.hasData {
		return nil, false
	}
	return lookupPath(v.data, f.path)
}

// lookupPath walks a decoded JSON value: a segment names an object member,
// or, on an array, a zero-based index.
func lookupPath(cur any, path []string) (any, bool) {
	for _, seg := range path {
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[seg]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, ok := arrayIndex(seg)
			if !ok || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// arrayIndex parses a path segment of decimal digits only.
func arrayIndex(seg string) (int, bool) {
	for i := range len(seg) {
		if !isDigit(seg[i]) {
			return 0, false
		}
	}
	i, err := strconv.Atoi(seg)
	return i, err == nil
}

// eval reports whether the event seen through v passes f.
func (f *compiledFilter) eval(v *eventView) bool {
	val, ok := v.field(f)
	return f.test(val, ok)
}

// test applies the filter to a field value; present is false when the
// field is absent.
func (f *compiledFilter) test(val any, present bool) bool {
	switch f.op {
	case OpNeq:
		return !present || !equalOperand(val, &f.val)
	case OpExists:
		return present == f.exist
	}
	if !present {
		return false
	}
	switch f.op {
	case OpEq:
		return equalOperand(val, &f.val)
	case OpIn:
		if f.set != nil {
			s, ok := val.(string)
			if !ok {
				return false
			}
			_, in := f.set[s]
			return in
		}
		for i := range f.list {
			if equalOperand(val, &f.list[i]) {
				return true
			}
		}
		return false
	case OpPrefix:
		s, ok := val.(string)
		return ok && strings.HasPrefix(s, f.val.s)
	case OpSuffix:
		s, ok := val.(string)
		return ok && strings.HasSuffix(s, f.val.s)
	case OpGt, OpGte, OpLt, OpLte:
		c, ok := compareOrdered(val, &f.val)
		if !ok {
			return false
		}
		switch f.op {
		case OpGt:
			return c > 0
		case OpGte:
			return c >= 0
		case OpLt:
			return c < 0
		default:
			return c <= 0
		}
	}
	return false
}

// compareOrdered compares a field value with a number or string operand;
// ok is false for mixed types.
func compareOrdered(val any, o *operand) (int, bool) {
	switch o.kind {
	case kindNumber:
		d, ok := numberOf(val)
		if !ok {
			return 0, false
		}
		return d.cmp(o.n), true
	case kindString:
		s, ok := val.(string)
		if !ok {
			return 0, false
		}
		return strings.Compare(s, o.s), true
	default:
		return 0, false
	}
}

// equalOperand reports whether a field value equals the operand as JSON
// values: numbers by numeric value, arrays element-wise, objects by members.
func equalOperand(val any, o *operand) bool {
	switch o.kind {
	case kindNull:
		return val == nil
	case kindBool:
		b, ok := val.(bool)
		return ok && b == o.b
	case kindString:
		s, ok := val.(string)
		return ok && s == o.s
	case kindNumber:
		d, ok := numberOf(val)
		return ok && d.cmp(o.n) == 0
	default:
		return equalJSON(val, o.v)
	}
}

// equalJSON compares two decoded JSON values.
func equalJSON(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equalJSON(xv, yv) {
				return false
			}
		}
		return true
	}
	da, ok := numberOf(a)
	if !ok {
		return false
	}
	db, ok := numberOf(b)
	return ok && da.cmp(db) == 0
}

// numberOf returns the exact value of a numeric field value. Events decoded
// from JSON carry json.Number; extensions set in code may carry Go numbers.
func numberOf(v any) (decimal, bool) {
	switch x := v.(type) {
	case json.Number:
		return parseDecimal(string(x))
	case float64:
		if !floatOK(x) {
			return decimal{}, false
		}
		return parseDecimal(strconv.FormatFloat(x, 'g', -1, 64))
	case int:
		return parseDecimal(strconv.Itoa(x))
	case int64:
		return parseDecimal(strconv.FormatInt(x, 10))
	case uint64:
		return parseDecimal(strconv.FormatUint(x, 10))
	default:
		return decimal{}, false
	}
}
