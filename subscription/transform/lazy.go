package transform

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/dop251/goja"
)

// The handler's payload is built lazily: each JSON object becomes a goja
// dynamic object over the payload's text whose keys are read when it is made
// and whose values are built on first access (a nested object becoming
// another lazy object), so a handler that reads a few fields builds only
// those. Arrays are lazy too (lazy_array.go).
//
// A lazy object behaves as the plain object JSON.parse makes: own, writable,
// enumerable, configurable data properties, keys in JavaScript's order
// (array indices first, ascending, then the rest as written; a repeated key
// keeps its first place and its last value), Object.prototype as prototype,
// a "__proto__" key an own property. What a dynamic object cannot do
// (freeze, seal, preventExtensions, a property defined with other
// attributes or as an accessor, a Symbol key, a private element) makes the
// engine run the handler again on an input built whole (see needsWhole).

// lazyIndexMin is the number of keys from which a lazy object looks keys up
// in a map rather than by a linear search.
const lazyIndexMin = 16

// lazyInput is what the lazy values of one run's payload share.
type lazyInput struct {
	rt   *goja.Runtime
	data []byte
	// tape is the text's tape (tape.go), and canonical whether the text is
	// JSON.stringify's (see jsonToValue), both from the scan.
	tape      []int32
	canonical bool
	// objectProto is Object.prototype: a lazy object whose prototype is
	// another may stringify otherwise (a toJSON).
	objectProto *goja.Object
	// arrayProto is Array.prototype, known once a lazy array was made.
	arrayProto *goja.Object
	// root is the payload when it is an object or an array.
	root *goja.Object
	// objects and arrays are the lazy objects and arrays made so far.
	objects []*goja.Object
	arrays  []*goja.Object
	// written is set once any lazy object or array was written to or
	// deleted from.
	written bool
	// wantWhole is set once a lazy array stopped the run to run it again
	// on an input built whole (lazyArray.whole).
	wantWhole bool
}

// lazyObject is the goja.DynamicObject of one JSON object of the payload.
type lazyObject struct {
	in    *lazyInput
	props []lazyProp
	index map[string]int // with lazyIndexMin keys or more
}

// lazyProp is one property of a lazy object.
type lazyProp struct {
	key string
	// off is the offset of the value's text and seg its tape segment (-1
	// for a scalar), while val is nil (not built yet).
	off, seg int32
	val      goja.Value
}

// lazyObjectType is a lazy object's export type: how the sandbox's guards
// tell one from a plain object without exporting it.
func lazyObjectType() reflect.Type { return reflect.TypeFor[*lazyObject]() }

// isLazy reports whether v is a lazy object or a lazy array: what the
// sandbox's guards of freeze, seal, preventExtensions and defineProperty
// send to a run on an input built whole.
func isLazy(v goja.Value) bool {
	obj, ok := v.(*goja.Object)
	if !ok {
		return false
	}
	t := obj.ExportType()
	return t == lazyObjectType() || t == lazyArrayType()
}

// untouched reports whether v is the payload object itself, never written to
// (nor anything in it) and so stringifying to what it was built from: the
// engine then sends the input's bytes without stringifying.
func (in *lazyInput) untouched(v goja.Value) bool {
	if in == nil || in.root == nil || in.written {
		return false
	}
	if obj, ok := v.(*goja.Object); !ok || obj != in.root {
		return false
	}
	for _, o := range in.objects {
		if o.Prototype() != in.objectProto {
			return false
		}
	}
	for _, a := range in.arrays {
		if a.Prototype() != in.arrayProto {
			return false
		}
	}
	return true
}

// object builds the lazy object of the tape segment seg: its keys and where
// each value starts, as the scan recorded them.
func (in *lazyInput) object(seg int32) (*goja.Object, error) {
	n := in.tape[seg]
	o := &lazyObject{in: in, props: make([]lazyProp, 0, n)}
	for m := seg + 1; n > 0; n, m = n-1, m+tapeMember {
		key, err := in.key(m)
		if err != nil {
			return nil, err
		}
		off, child := in.tape[m+3], in.tape[m+4]
		if i := o.find(key); i >= 0 {
			o.props[i].off, o.props[i].seg = off, child // a repeated key keeps its place, with the last value
		} else {
			o.add(key, off, child, nil)
		}
	}
	return o.make(), nil
}

// make wraps o in its JavaScript object.
func (o *lazyObject) make() *goja.Object {
	obj := o.in.rt.NewDynamicObject(o)
	o.in.objects = append(o.in.objects, obj)
	return obj
}

func (o *lazyObject) find(key string) int {
	if o.index != nil {
		if i, ok := o.index[key]; ok {
			return i
		}
		return -1
	}
	for i := range o.props {
		if o.props[i].key == key {
			return i
		}
	}
	return -1
}

func (o *lazyObject) add(key string, off, seg int32, v goja.Value) {
	o.props = append(o.props, lazyProp{key: key, off: off, seg: seg, val: v})
	switch {
	case o.index != nil:
		o.index[key] = len(o.props) - 1
	case len(o.props) >= lazyIndexMin:
		o.reindex()
	}
}

func (o *lazyObject) reindex() {
	if len(o.props) < lazyIndexMin {
		o.index = nil
		return
	}
	o.index = make(map[string]int, len(o.props))
	for i := range o.props {
		o.index[o.props[i].key] = i
	}
}

// Get builds the key's value on its first read.
func (o *lazyObject) Get(key string) goja.Value { //nolint:ireturn // goja values are an interface
	i := o.find(key)
	if i < 0 {
		return nil
	}
	if o.props[i].val == nil {
		v, err := o.in.value(o.props[i].off, o.props[i].seg)
		if err != nil {
			// The text was checked whole before the run.
			panic(o.in.rt.NewGoError(fmt.Errorf("input payload: %w", err)))
		}
		o.props[i].val = v
	}
	return o.props[i].val
}

// Set sets or adds the key.
func (o *lazyObject) Set(key string, val goja.Value) bool {
	o.in.written = true
	if i := o.find(key); i >= 0 {
		o.props[i].val = val
		return true
	}
	o.add(key, 0, -1, val)
	return true
}

// Has reports whether the key is the object's own.
func (o *lazyObject) Has(key string) bool {
	return o.find(key) >= 0
}

// Delete removes the key.
func (o *lazyObject) Delete(key string) bool {
	i := o.find(key)
	if i < 0 {
		return true
	}
	o.in.written = true
	o.props = slices.Delete(o.props, i, i+1)
	if o.index != nil {
		o.reindex()
	}
	return true
}

// Keys lists the keys in a plain object's order: array indices ascending,
// then the others in the order they were added.
func (o *lazyObject) Keys() []string {
	return orderedKeys(len(o.props), func(i int) string { return o.props[i].key })
}

// orderedKeys lists n keys (key(i) the i-th, in the order they were added)
// in a plain object's order: array indices first, ascending, then the others
// as added.
func orderedKeys(n int, key func(i int) string) []string {
	keys := make([]string, 0, n)
	for i := range n {
		if k := key(i); maybeIndex(k) && isArrayIndex(k) {
			keys = append(keys, k)
		}
	}
	indices := len(keys)
	if indices > 1 {
		slices.SortFunc(keys, cmpIndex)
	}
	for i := range n {
		if k := key(i); indices == 0 || !maybeIndex(k) || !isArrayIndex(k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// maybeIndex is isArrayIndex's cheap first test: an index starts with a
// digit.
func maybeIndex(k string) bool { return k != "" && '0' <= k[0] && k[0] <= '9' }

// isArrayIndex reports whether key is an array index as JavaScript orders
// them: the canonical decimal of an integer below 2^32−1.
func isArrayIndex(key string) bool {
	if key == "" || len(key) > 10 || (key[0] == '0' && len(key) > 1) {
		return false
	}
	n, err := strconv.ParseUint(key, 10, 64)
	return err == nil && n < 1<<32-1
}

// cmpIndex orders two array indices numerically.
func cmpIndex(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

// dynamicObjectError reports whether err is goja's refusal of something a
// dynamic object or array cannot do ("Dynamic objects do not support Symbol
// properties", "… of a dynamic object", "Cannot set property \"x\" on a
// dynamic array", …), or a lazy array's stop (lazyArray.whole).
func dynamicObjectError(err error) bool {
	if interrupted, ok := errors.AsType[*goja.InterruptedError](err); ok {
		return interrupted.Value() == kindWhole
	}
	exc, ok := err.(*goja.Exception) //nolint:errorlint // the VM returns the exception itself
	if !ok {
		return false
	}
	msg := strings.ToLower(thrownMessage(exc.Value()))
	return strings.Contains(msg, "dynamic object") || strings.Contains(msg, "dynamic array")
}
