package transform

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dop251/goja"
)

// maxJSONNesting bounds how deeply JSON.parse and JSON.stringify nest: both
// recurse in Go once per level.
const maxJSONNesting = 1000

var errNotFunction = errors.New("not a function")

func wrapGuard(what string, err error) error {
	return fmt.Errorf("guard %s: %w", what, err)
}

// guardJSON bounds JSON.parse's nesting (it recurses per level in Go) and
// JSON.stringify's output and nesting.
func (s *sandbox) guardJSON(get getFunc, set setFunc) error {
	rt := s.rt
	jsonObj := rt.Get("JSON").ToObject(rt)
	_, parse, err := get("JSON.parse")
	if err != nil {
		return err
	}
	_, stringify, err := get("JSON.stringify")
	if err != nil {
		return err
	}
	s.parse = parse
	if err := set(jsonObj, "parse", func(c goja.FunctionCall) goja.Value {
		text := c.Argument(0).ToString()
		if jsonDepth(text.String()) > maxJSONNesting {
			s.throwRangef("JSON.parse: the text nests more than %d levels", maxJSONNesting)
		}
		return call(parse, c.This, append([]goja.Value{text}, c.Arguments[min(1, len(c.Arguments)):]...)...)
	}); err != nil {
		return err
	}
	if err := set(jsonObj, "stringify", func(c goja.FunctionCall) goja.Value {
		b := &budget{s: s, max: s.maxStr, what: "JSON.stringify"}
		return s.stringify(stringify, c.Argument(0), c.Argument(1), c.Argument(2), b)
	}); err != nil {
		return err
	}
	s.origStringify = stringify
	return nil
}

// jsonDepth is the deepest nesting of arrays and objects in a JSON text
// (strings skipped).
func jsonDepth(text string) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case inString:
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// stringifyCall is the state of one guarded JSON.stringify: what the
// sandbox's counter (the replacer it runs goja's JSON.stringify with) reads.
type stringifyCall struct {
	b        *budget
	userFunc goja.Callable
	allow    map[string]bool
	gap      int64
	depth    map[*goja.Object]int
}

// stringify is JSON.stringify with a budget of maxBytes and a nesting bound.
// It runs goja's own JSON.stringify with a replacer that counts every piece
// of output before it is written (so a value referenced a million times
// counts a million times) and applies the caller's replacer, function or
// property list, itself. The replacer is the sandbox's counter, made once;
// the calls nest (a toJSON or replacer may stringify), each with its state.
func (s *sandbox) stringify( //nolint:ireturn // goja values are an interface
	orig goja.Callable, value, replacer, space goja.Value, b *budget,
) goja.Value {
	st := &stringifyCall{b: b}
	st.userFunc, _ = goja.AssertFunction(replacer)
	if obj, ok := replacer.(*goja.Object); ok && st.userFunc == nil && obj.ClassName() == "Array" {
		s.checkLen(b.what, obj)
		st.allow = map[string]bool{}
		for i := range s.lengthOf(obj) {
			v := obj.Get(strconv.FormatInt(i, 10))
			switch v.Export().(type) {
			case string, int64, float64:
				st.allow[v.String()] = true
			}
		}
	}
	if space != nil && !goja.IsUndefined(space) {
		if str, ok := space.(goja.String); ok {
			st.gap = int64(min(str.Length(), 10))
		} else if n := space.ToInteger(); n > 0 {
			st.gap = min(n, 10)
		}
	}
	if s.counter == nil {
		s.counter = s.rt.ToValue(s.count)
	}
	prev := s.call
	s.call = st
	defer func() { s.call = prev }()
	return call(orig, goja.Undefined(), value, s.counter, space)
}

// count is the counter: the replacer of the innermost guarded stringify.
func (s *sandbox) count(fc goja.FunctionCall) goja.Value { //nolint:ireturn // goja values are an interface
	st := s.call
	what := st.b.what
	holder, _ := fc.This.(*goja.Object)
	key, v := fc.Argument(0), fc.Argument(1)
	d := st.depth[holder]
	inArray := holder != nil && holder.ClassName() == "Array"
	keyStr := key.String()
	if st.allow != nil && !inArray && keyStr != "" && !st.allow[keyStr] {
		return goja.Undefined()
	}
	if st.userFunc != nil {
		v = call(st.userFunc, fc.This, key, v)
	}
	cost := int64(1) + st.gap*int64(d+1)
	if !inArray && keyStr != "" {
		cost += quotedLen(keyStr) + 1
	}
	switch x := v.(type) {
	case *goja.Object:
		if _, isFunc := goja.AssertFunction(x); isFunc {
			return v
		}
		if d+1 > maxJSONNesting {
			s.throwRangef("%s: the value nests more than %d levels", what, maxJSONNesting)
		}
		if st.depth == nil {
			st.depth = map[*goja.Object]int{}
		}
		st.depth[x] = d + 1
		if x.ClassName() == "Array" {
			s.checkLen(what, x)
		}
		if x.ClassName() == "String" {
			cost += quotedLen(x.String())
		} else {
			cost += 2
		}
	case goja.String:
		cost += quotedLen(x.String())
	default:
		cost += 24
	}
	st.b.add(cost)
	return v
}

// quotedLen is the length of s as a JSON string.
func quotedLen(s string) int64 {
	n := int64(len(s)) + 2
	if strings.ContainsAny(s, "\"\\") {
		n += int64(strings.Count(s, "\"") + strings.Count(s, "\\"))
	}
	for i := range len(s) {
		if s[i] < 0x20 {
			n += 5
		}
	}
	return n
}
