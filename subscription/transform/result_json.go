package transform

import (
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// resultWriter writes a result's payload as goja's JSON.stringify does,
// straight from the goja values into a buffer kept with the sandbox,
// instead of running JSON.stringify with the guard's replacer (a call from
// JavaScript into Go for every value). It keeps the guarded stringify's
// bounds: the same nesting bound and array length bound with the same
// errors, and a byte budget checked while writing — the bytes written plus
// one for every member left out (an undefined or a function), so that the
// work stays bounded even when little is written — so a huge result stops
// early. It runs inside a goja native function: getters and toJSON methods
// run under the run's interrupt, and what it throws becomes the run's error.
//
// An object key that goja hands over as text with a replacement character
// (a key with a lone surrogate loses it in Go) makes the writer give up:
// the caller then runs the guarded stringify, whose getters and toJSON
// methods run a second time.
type resultWriter struct {
	s       *sandbox
	b       *budget
	buf     []byte
	skipped int64
	stack   []*goja.Object
	giveUp  bool
}

// write writes v, the root value; it reports false when v is not a JSON
// value (undefined, a function, a symbol), as JSON.stringify then returns
// undefined.
func (w *resultWriter) write(v goja.Value) bool {
	return w.value("", v, 0)
}

// room throws the budget's RangeError when n more bytes would pass it.
func (w *resultWriter) room(n int64) {
	if int64(len(w.buf))+w.skipped+n > w.b.max {
		w.b.exceeded = true
		w.s.throwRangef("%s: the result would be more than %d bytes", w.b.what, w.b.max)
	}
}

// value writes the value v of a member key ("" for the root) at depth, the
// nesting of its holder: what goja's
// SerializeJSONProperty does, the guard's counter checks included.
func (w *resultWriter) value(key string, v goja.Value, depth int) bool { //nolint:gocyclo,cyclop // JSON.stringify's cases, one after another
	rt := w.s.rt
	if obj, ok := v.(*goja.Object); ok {
		if toJSON, ok := goja.AssertFunction(obj.Get("toJSON")); ok {
			v = call(toJSON, obj, rt.ToValue(key))
		}
	}
	obj, isObj := v.(*goja.Object)
	if isObj {
		if _, isFunc := goja.AssertFunction(obj); isFunc {
			return false
		}
		if depth+1 > maxJSONNesting {
			w.s.throwRangef("%s: the value nests more than %d levels", w.b.what, maxJSONNesting)
		}
		switch obj.ClassName() {
		case "Array":
			w.s.checkLen(w.b.what, obj)
		case "Number":
			v, isObj = obj.ToNumber(), false
		case "String":
			v, isObj = obj.ToString(), false
		case "Boolean":
			b, _ := obj.Export().(bool)
			v, isObj = rt.ToValue(b), false
		case "Object":
			// A boxed symbol or BigInt is an "Object" to goja; a symbol
			// exports as a string.
			switch t := obj.ExportType(); {
			case t == nil:
			case t.Kind() == reflect.String:
				return false
			case t == reflect.TypeFor[*big.Int]():
				panic(rt.NewTypeError("Do not know how to serialize a BigInt"))
			}
		}
	}
	if isObj {
		if obj.ClassName() == "RawJSON" {
			raw := obj.Get("rawJSON").String()
			w.room(int64(len(raw)))
			w.buf = append(w.buf, raw...)
			return true
		}
		for _, o := range w.stack {
			if o == obj {
				panic(rt.NewTypeError("Converting circular structure to JSON"))
			}
		}
		w.stack = append(w.stack, obj)
		if obj.ClassName() == "Array" {
			w.array(obj, depth+1)
		} else {
			w.object(obj, depth+1)
		}
		w.stack = w.stack[:len(w.stack)-1]
		return true
	}
	switch x := v.(type) {
	case nil:
		return false
	case goja.String:
		w.quote(x)
		return true
	}
	if goja.IsUndefined(v) {
		return false
	}
	if goja.IsNull(v) {
		w.room(4)
		w.buf = append(w.buf, "null"...)
		return true
	}
	switch t := v.ExportType(); {
	case t == nil:
		return false
	case t.Kind() == reflect.Bool:
		w.room(5)
		w.buf = strconv.AppendBool(w.buf, v.ToBoolean())
	case t.Kind() == reflect.Int64:
		w.room(20)
		w.buf = strconv.AppendInt(w.buf, v.ToInteger(), 10)
	case t.Kind() == reflect.Float64:
		w.room(24)
		if f := v.ToFloat(); math.IsNaN(f) || math.IsInf(f, 0) {
			w.buf = append(w.buf, "null"...)
		} else {
			w.buf = append(w.buf, v.String()...)
		}
	case t == reflect.TypeFor[*big.Int]():
		panic(rt.NewTypeError("Do not know how to serialize a BigInt"))
	default:
		return false // a symbol
	}
	return true
}

// array writes an array's elements, null for what is not a JSON value.
func (w *resultWriter) array(arr *goja.Object, depth int) {
	n := w.s.lengthOf(arr)
	w.room(2)
	w.buf = append(w.buf, '[')
	for i := range n {
		if w.giveUp {
			return
		}
		if i > 0 {
			w.room(1)
			w.buf = append(w.buf, ',')
		}
		k := strconv.FormatInt(i, 10)
		if !w.value(k, arr.Get(k), depth) {
			w.room(4)
			w.buf = append(w.buf, "null"...)
		}
	}
	w.buf = append(w.buf, ']')
}

// object writes an object's own enumerable string-keyed members in their
// order, leaving out those whose value is not a JSON value.
func (w *resultWriter) object(obj *goja.Object, depth int) {
	w.room(2)
	w.buf = append(w.buf, '{')
	first := true
	for _, k := range obj.Keys() {
		if w.giveUp {
			return
		}
		if strings.Contains(k, "\uFFFD") {
			w.giveUp = true
			return
		}
		w.room(int64(len(k)) + 3)
		mark := len(w.buf)
		if !first {
			w.buf = append(w.buf, ',')
		}
		w.quoteText(k)
		w.buf = append(w.buf, ':')
		w.room(0)
		if w.value(k, obj.Get(k), depth) {
			first = false
		} else {
			w.buf = w.buf[:mark]
			w.skipped++
			w.room(0)
		}
	}
	w.buf = append(w.buf, '}')
}

// quote writes a string value as JSON.stringify quotes it: lone surrogates
// as \u escapes.
func (w *resultWriter) quote(s goja.String) {
	// A string's JSON takes at least a byte per UTF-16 unit: a huge string
	// is refused before it is converted.
	w.room(int64(s.Length()) + 2)
	text := s.String()
	if !strings.Contains(text, "\uFFFD") {
		w.quoteText(text)
		return
	}
	// The text may stand for lone surrogates: read the UTF-16 units.
	w.buf = append(w.buf, '"')
	n := s.Length()
	for i := 0; i < n; i++ {
		c := rune(s.CharAt(i))
		if utf16.IsSurrogate(c) && c < 0xDC00 && i+1 < n {
			if c2 := rune(s.CharAt(i + 1)); c2 >= 0xDC00 && c2 <= 0xDFFF {
				w.buf = utf8.AppendRune(w.buf, utf16.DecodeRune(c, c2))
				i++
				continue
			}
		}
		w.rune(c)
	}
	w.buf = append(w.buf, '"')
	w.room(0)
}

// quoteText writes UTF-8 text (with no lone surrogates) as a JSON string.
func (w *resultWriter) quoteText(text string) {
	w.buf = append(w.buf, '"')
	start := 0
	for i := range len(text) {
		if c := text[i]; c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		w.buf = append(w.buf, text[start:i]...)
		w.rune(rune(text[i]))
		start = i + 1
	}
	w.buf = append(w.buf, text[start:]...)
	w.buf = append(w.buf, '"')
	w.room(0)
}

const hexDigits = "0123456789abcdef"

// rune writes one character of a JSON string, escaped as goja escapes it.
func (w *resultWriter) rune(r rune) {
	switch r {
	case '"', '\\':
		w.buf = append(w.buf, '\\', byte(r))
	case '\b':
		w.buf = append(w.buf, `\b`...)
	case '\t':
		w.buf = append(w.buf, `\t`...)
	case '\n':
		w.buf = append(w.buf, `\n`...)
	case '\f':
		w.buf = append(w.buf, `\f`...)
	case '\r':
		w.buf = append(w.buf, `\r`...)
	default:
		switch {
		case r < 0x20:
			w.buf = append(w.buf, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xF])
		case utf16.IsSurrogate(r):
			w.buf = append(w.buf, '\\', 'u', hexDigits[r>>12], hexDigits[(r>>8)&0xF], hexDigits[(r>>4)&0xF], hexDigits[r&0xF])
		default:
			w.buf = utf8.AppendRune(w.buf, r)
		}
	}
}
