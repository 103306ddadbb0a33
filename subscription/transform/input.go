package transform

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
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
	// rt is nil for a scan that only checks the text (and whether it is
	// canonical): no value is built.
	rt   *goja.Runtime
	data []byte
	i    int
	// record, set on a scan (rt nil), records the text's objects and
	// arrays in tape, with scratch the stack of the entries of those being
	// read (tape.go); last is then the tape index of the segment of the
	// value just read, -1 for a scalar. The slices are the parser's while
	// it reads (no write barrier per entry).
	record        bool
	tape, scratch []int32
	last          int32
	// objectProto is Object.prototype, looked up once.
	objectProto *goja.Object
	// canonical is false once the text read differs, or may differ, from
	// what JSON.stringify prints for the value built.
	canonical bool
}

// put gives obj the own data property key, as JSON.parse does.
func (p *jsonParser) put(obj *goja.Object, key string, v goja.Value) error {
	if p.objectProto == nil {
		p.objectProto = obj.Prototype()
	}
	return put(obj, p.objectProto, key, v)
}

// put gives obj, a fresh plain object whose prototype is proto
// (Object.prototype), the own data property key, as JSON.parse does. A key
// that proto lacks is simply set (for a fresh plain object the same own,
// writable, enumerable, configurable property, at a third of
// DefineDataProperty's cost); a key it has ("__proto__", "toString",
// "constructor", …) is defined, since setting it would reach the frozen
// prototype's property.
func put(obj, proto *goja.Object, key string, v goja.Value) error {
	if proto == nil || proto.Get(key) != nil {
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
		if p.rt == nil {
			_, _, err := p.scanStr()
			return nil, err
		}
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return p.rt.ToValue(s), nil
	case 't', 'f', 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if len(p.data)-p.i >= len(lit) && string(p.data[p.i:p.i+len(lit)]) == lit {
				p.i += len(lit)
				switch {
				case p.rt == nil:
					return nil, nil //nolint:nilnil // a scan builds no value
				case lit == "null":
					return goja.Null(), nil
				}
				return p.rt.ToValue(lit == "true"), nil
			}
		}
		return nil, p.fail("invalid literal")
	default:
		return p.number()
	}
}

func (p *jsonParser) object(depth int) (goja.Value, error) { //nolint:ireturn // goja values are an interface
	var obj *goja.Object
	if p.rt != nil {
		obj = p.rt.NewObject()
	}
	// keys are the object's keys so far, as written, while the text is
	// canonical (escapes other than JSON.stringify's make it not): a linear
	// search is cheaper than a map for the objects events carry, and a long
	// object only costs the fast path.
	var keysBuf [16][]byte
	keys := keysBuf[:0]
	base := p.tapeBase()
	p.i++ // {
	p.space()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		if obj == nil {
			p.tapeSeal(base, tapeMember)
			return nil, nil //nolint:nilnil // a scan builds no value
		}
		return obj, nil
	}
	for {
		p.space()
		if p.i >= len(p.data) || p.data[p.i] != '"' {
			return nil, p.fail("expected a key")
		}
		keyStart := p.i
		raw, escaped, err := p.scanStr()
		if err != nil {
			return nil, err
		}
		keyEnd := p.i
		if p.canonical && (isDigits(raw) || slices.ContainsFunc(keys, func(k []byte) bool { return string(k) == string(raw) })) {
			// JavaScript puts index keys first, and a repeated key keeps
			// its first place with the last value.
			p.canonical = false
		}
		if p.canonical {
			keys = append(keys, raw)
		}
		var key string
		if obj != nil {
			end := p.i
			p.i = keyStart
			if key, err = p.str(); err != nil {
				return nil, err
			}
			p.i = end
		}
		p.space()
		if p.i >= len(p.data) || p.data[p.i] != ':' {
			return nil, p.fail("expected ':'")
		}
		p.i++
		start := p.valueStart(depth + 1)
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if obj != nil {
			if err := p.put(obj, key, v); err != nil {
				return nil, err
			}
		}
		if p.record {
			p.scratch = append(p.scratch, int32(keyStart), int32(keyEnd), b2i(escaped), start, p.last) //nolint:gosec // G115: the text is at most maxTapeText bytes
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
			if obj == nil {
				p.tapeSeal(base, tapeMember)
				return nil, nil //nolint:nilnil // a scan builds no value
			}
			return obj, nil
		default:
			return nil, p.fail("expected ',' or '}'")
		}
	}
}

func (p *jsonParser) array(depth int) (goja.Value, error) { //nolint:ireturn // goja values are an interface
	base := p.tapeBase()
	p.i++ // [
	var items []any
	p.space()
	if p.i < len(p.data) && p.data[p.i] == ']' {
		p.i++
		if p.rt == nil {
			p.tapeSeal(base, tapeElement)
			return nil, nil //nolint:nilnil // a scan builds no value
		}
		return p.rt.NewArray(), nil
	}
	for {
		start := p.valueStart(depth + 1)
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if p.rt != nil {
			items = append(items, v)
		}
		if p.record {
			p.scratch = append(p.scratch, start, p.last)
		}
		p.space()
		if p.i >= len(p.data) {
			return nil, p.fail("unexpected end")
		}
		switch p.data[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			if p.rt == nil {
				p.tapeSeal(base, tapeElement)
				return nil, nil //nolint:nilnil // a scan builds no value
			}
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
	raw, escaped, err := p.rawStr()
	if err != nil {
		return "", err
	}
	if !escaped {
		return string(raw), nil
	}
	var s string
	if err := json.Unmarshal(p.data[start:p.i], &s); err != nil {
		// scanStr's error: the lazy scan refuses the text with it.
		return "", fmt.Errorf("%w at byte %d: invalid escape", errInputJSON, start)
	}
	return s, nil
}

// scanStr checks a JSON string without building it, and returns its text
// between the quotes as written; escaped reports that it has escapes.
func (p *jsonParser) scanStr() (raw []byte, escaped bool, err error) {
	start := p.i
	raw, escaped, err = p.rawStr()
	if err != nil {
		return nil, false, err
	}
	if escaped && !json.Valid(p.data[start:p.i]) {
		return nil, false, fmt.Errorf("%w at byte %d: invalid escape", errInputJSON, start)
	}
	return raw, escaped, nil
}

// rawStr reads a JSON string and returns its text between the quotes as
// written; escaped reports that the text has escapes.
func (p *jsonParser) rawStr() (raw []byte, escaped bool, err error) {
	start := p.i
	p.i++ // "
	ascii := true
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
			return p.data[start+1 : p.i-1], escaped, nil
		case c < 0x20:
			return nil, false, p.fail("control character in a string")
		}
		p.i++
	}
	return nil, false, p.fail("unterminated string")
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
	if p.rt == nil && plainNumber(p.data[start:p.i]) {
		return nil, nil //nolint:nilnil // a scan builds no value
	}
	text := string(p.data[start:p.i])
	if text == "" {
		return nil, p.fail("unexpected character")
	}
	if !strings.ContainsAny(text, ".eE") { // ParseInt's error for a fraction would cost an allocation
		if n, err := strconv.ParseInt(text, 10, 64); err == nil && n >= -(1<<53) && n <= 1<<53 {
			if p.canonical && strconv.FormatInt(n, 10) != text {
				p.canonical = false // -0
			}
			if p.rt == nil {
				return nil, nil //nolint:nilnil // a scan builds no value
			}
			return p.rt.ToValue(n), nil
		}
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
	if p.rt == nil {
		return nil, nil //nolint:nilnil // a scan builds no value
	}
	return p.rt.ToValue(f), nil
}

// plainNumber reports whether b is a JSON number JSON.stringify writes as
// it is, on a path that needs no conversion: an integer or a decimal
// fraction of at most 15 significant digits (so no shorter decimal reads
// back to the same double), no leading zero, no trailing zero in the
// fraction, not -0, and not below 1e-6 (written with an exponent).
func plainNumber(b []byte) bool {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	intEnd := 0
	for intEnd < len(b) && b[intEnd] >= '0' && b[intEnd] <= '9' {
		intEnd++
	}
	switch {
	case intEnd == 0 || intEnd > 15:
		return false
	case b[0] == '0' && intEnd > 1:
		return false
	case intEnd == len(b):
		return !neg || string(b) != "0"
	case b[intEnd] != '.':
		return false
	}
	frac := b[intEnd+1:]
	if len(frac) == 0 || intEnd+len(frac) > 15 || frac[len(frac)-1] == '0' {
		return false
	}
	for _, c := range frac {
		if c < '0' || c > '9' {
			return false
		}
	}
	if b[0] == '0' {
		// 0.000001 is written as it is, 0.0000001 as 1e-7.
		zeros := 0
		for zeros < len(frac) && frac[zeros] == '0' {
			zeros++
		}
		return zeros < 6
	}
	return true
}

// isDigits reports whether a key is all decimal digits: a possible array
// index, which JavaScript orders before the other keys.
func isDigits(key []byte) bool {
	if len(key) == 0 {
		return false
	}
	for i := range key {
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
