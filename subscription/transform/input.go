package transform

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// errInputJSON is input that is not valid JSON.
var errInputJSON = errors.New("invalid JSON")

// jsonToValue builds the JavaScript value of a JSON text (the handler's
// payload) directly, as JSON.parse would: plain objects with their keys in
// order, own data properties (so a "__proto__" or "constructor" key is an
// ordinary property). goja's own JSON.parse goes through encoding/json's
// token stream, which costs more than the rest of a run together.
//
// canonical reports that data is exactly what JSON.stringify prints for the
// value built: compact, keys in their JavaScript order and each once,
// numbers and strings written as JavaScript writes them. The engine then
// compares the handler's payload with data itself instead of stringifying
// the input (a third of a run's cost). It errs towards false: a text it is
// unsure of is stringified.
func jsonToValue(rt *goja.Runtime, data []byte) (v goja.Value, canonical bool, err error) { //nolint:ireturn // goja values are an interface
	p := jsonParser{rt: rt, data: data, canonical: true}
	v, err = p.value(0)
	if err != nil {
		return nil, false, err
	}
	p.space()
	if p.i != len(p.data) {
		return nil, false, p.fail("trailing data")
	}
	return v, p.canonical, nil
}

type jsonParser struct {
	rt   *goja.Runtime
	data []byte
	i    int
	// objectProto is Object.prototype, looked up once.
	objectProto *goja.Object
	// canonical is false once the text read differs, or may differ, from
	// what JSON.stringify prints for the value built.
	canonical bool
}

// put gives obj the own data property key, as JSON.parse does. A key that
// Object.prototype lacks is simply set (for a fresh plain object the same
// own, writable, enumerable, configurable property, at a third of
// DefineDataProperty's cost); a key it has ("__proto__", "toString", …) is
// defined, since setting it would reach the frozen prototype's property.
func (p *jsonParser) put(obj *goja.Object, key string, v goja.Value) error {
	if p.objectProto == nil {
		p.objectProto = obj.Prototype()
	}
	if p.objectProto == nil || p.objectProto.Get(key) != nil {
		return define(obj, key, v)
	}
	if err := obj.Set(key, v); err != nil {
		return fmt.Errorf("input key %q: %w", truncate(key, 100), err)
	}
	return nil
}

func (p *jsonParser) fail(what string) error {
	return fmt.Errorf("%w at byte %d: %s", errInputJSON, p.i, what)
}

func (p *jsonParser) space() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.canonical = false
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (goja.Value, error) { //nolint:ireturn // goja values are an interface
	if depth > maxJSONNesting {
		return nil, p.fail("nested too deeply")
	}
	p.space()
	if p.i >= len(p.data) {
		return nil, p.fail("unexpected end")
	}
	switch p.data[p.i] {
	case '{':
		return p.object(depth)
	case '[':
		return p.array(depth)
	case '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return p.rt.ToValue(s), nil
	case 't', 'f', 'n':
		for _, lit := range []struct {
			text string
			v    goja.Value
		}{{"true", p.rt.ToValue(true)}, {"false", p.rt.ToValue(false)}, {"null", goja.Null()}} {
			if len(p.data)-p.i >= len(lit.text) && string(p.data[p.i:p.i+len(lit.text)]) == lit.text {
				p.i += len(lit.text)
				return lit.v, nil
			}
		}
		return nil, p.fail("invalid literal")
	default:
		return p.number()
	}
}

func (p *jsonParser) object(depth int) (goja.Value, error) { //nolint:ireturn // goja values are an interface
	obj := p.rt.NewObject()
	// keys are the object's keys so far, while the text is canonical: a
	// linear search is cheaper than a map for the objects events carry, and
	// a long object only costs the fast path.
	var keysBuf [16]string
	keys := keysBuf[:0]
	p.i++ // {
	p.space()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		return obj, nil
	}
	for {
		p.space()
		if p.i >= len(p.data) || p.data[p.i] != '"' {
			return nil, p.fail("expected a key")
		}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		if p.canonical && (isDigits(key) || slices.Contains(keys, key)) {
			// JavaScript puts index keys first, and a repeated key keeps
			// its first place with the last value.
			p.canonical = false
		}
		if p.canonical {
			keys = append(keys, key)
		}
		p.space()
		if p.i >= len(p.data) || p.data[p.i] != ':' {
			return nil, p.fail("expected ':'")
		}
		p.i++
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if err := p.put(obj, key, v); err != nil {
			return nil, err
		}
		p.space()
		if p.i >= len(p.data) {
			return nil, p.fail("unexpected end")
		}
		switch p.data[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return obj, nil
		default:
			return nil, p.fail("expected ',' or '}'")
		}
	}
}

func (p *jsonParser) array(depth int) (goja.Value, error) { //nolint:ireturn // goja values are an interface
	p.i++ // [
	var items []any
	p.space()
	if p.i < len(p.data) && p.data[p.i] == ']' {
		p.i++
		return p.rt.NewArray(), nil
	}
	for {
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
		p.space()
		if p.i >= len(p.data) {
			return nil, p.fail("unexpected end")
		}
		switch p.data[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return p.rt.NewArray(items...), nil
		default:
			return nil, p.fail("expected ',' or ']'")
		}
	}
}

// str reads a JSON string; only strings with escapes go through
// encoding/json.
func (p *jsonParser) str() (string, error) {
	start := p.i
	p.i++ // "
	escaped, ascii := false, true
	for p.i < len(p.data) {
		switch c := p.data[p.i]; {
		case c == '\\':
			escaped = true
			if p.i+1 < len(p.data) && !shortEscape(p.data[p.i+1]) {
				p.canonical = false // \u and \/ are written otherwise by JSON.stringify
			}
			p.i += 2
			continue
		case c >= utf8.RuneSelf:
			ascii = false
		case c == '"':
			p.i++
			if !ascii && p.canonical && !canonicalUTF8(p.data[start+1:p.i-1]) {
				p.canonical = false
			}
			if !escaped {
				return string(p.data[start+1 : p.i-1]), nil
			}
			var s string
			if err := json.Unmarshal(p.data[start:p.i], &s); err != nil {
				return "", fmt.Errorf("%w: %w", errInputJSON, err)
			}
			return s, nil
		case c < 0x20:
			return "", p.fail("control character in a string")
		}
		p.i++
	}
	return "", p.fail("unterminated string")
}

func (p *jsonParser) number() (goja.Value, error) { //nolint:ireturn // goja values are an interface
	start := p.i
	for p.i < len(p.data) {
		c := p.data[p.i]
		if c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			p.i++
			continue
		}
		break
	}
	text := string(p.data[start:p.i])
	if text == "" {
		return nil, p.fail("unexpected character")
	}
	if n, err := strconv.ParseInt(text, 10, 64); err == nil && n >= -(1<<53) && n <= 1<<53 {
		if p.canonical && strconv.FormatInt(n, 10) != text {
			p.canonical = false // -0
		}
		return p.rt.ToValue(n), nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return nil, p.fail("invalid number")
	}
	// JavaScript writes the shortest digits that read back, in plain
	// notation from 1e-6 to 1e21 (exclusive); outside, with an exponent
	// written its own way.
	if p.canonical && (math.Abs(f) < 1e-6 || math.Abs(f) >= 1e21 || strconv.FormatFloat(f, 'f', -1, 64) != text) {
		p.canonical = false
	}
	return p.rt.ToValue(f), nil
}

// isDigits reports whether a key is all decimal digits: a possible array
// index, which JavaScript orders before the other keys.
func isDigits(key string) bool {
	if key == "" {
		return false
	}
	for i := range len(key) {
		if key[i] < '0' || key[i] > '9' {
			return false
		}
	}
	return true
}

// shortEscape reports whether JSON.stringify writes the escape \c itself.
func shortEscape(c byte) bool {
	switch c {
	case '"', '\\', 'b', 'f', 'n', 'r', 't':
		return true
	}
	return false
}

// canonicalUTF8 reports whether a string's bytes are valid UTF-8 that
// JSON.stringify writes as they are: no U+2028 or U+2029 (which some
// engines escape) and no replacement character (which invalid input would
// also produce).
func canonicalUTF8(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == '\u2028' || r == '\u2029' || r == utf8.RuneError {
			return false
		}
		b = b[n:]
	}
	return true
}
