package transform

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/dop251/goja"
)

// errInputJSON is input that is not valid JSON.
var errInputJSON = errors.New("invalid JSON")

// jsonToValue builds the JavaScript value of a JSON text (the handler's
// input) directly, as JSON.parse would: plain objects with their keys in
// order, own data properties (so a "__proto__" or "constructor" key is an
// ordinary property). goja's own JSON.parse goes through encoding/json's
// token stream, which costs more than the rest of a run together.
func jsonToValue(rt *goja.Runtime, data []byte) (goja.Value, error) { //nolint:ireturn // goja values are an interface
	p := jsonParser{rt: rt, data: data}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.data) {
		return nil, p.fail("trailing data")
	}
	return v, nil
}

type jsonParser struct {
	rt   *goja.Runtime
	data []byte
	i    int
}

func (p *jsonParser) fail(what string) error {
	return fmt.Errorf("%w at byte %d: %s", errInputJSON, p.i, what)
}

func (p *jsonParser) space() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
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
		p.space()
		if p.i >= len(p.data) || p.data[p.i] != ':' {
			return nil, p.fail("expected ':'")
		}
		p.i++
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if err := obj.DefineDataProperty(key, v, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE); err != nil {
			return nil, fmt.Errorf("input key %q: %w", truncate(key, 100), err)
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
	escaped := false
	for p.i < len(p.data) {
		switch c := p.data[p.i]; {
		case c == '\\':
			escaped = true
			p.i += 2
			continue
		case c == '"':
			p.i++
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
		return p.rt.ToValue(n), nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return nil, p.fail("invalid number")
	}
	return p.rt.ToValue(f), nil
}
