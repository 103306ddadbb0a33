package transform

import (
	"reflect"

	"github.com/dop251/goja"
)

// A JSON array of a lazily built payload is a goja dynamic array over the
// payload's text: its length is known from one scan that records where each
// element starts, and each element is built on its first read (an object or
// an array in it becoming another lazy one), so a handler that reads an
// array's length or one element builds no more.
//
// A lazy array behaves as the array JSON.parse makes (Array.isArray, its
// prototype, its length, its own index keys, every Array.prototype method)
// as long as it has no holes and no own property but its indices and
// length. What would make a plain array differ makes the engine run the
// handler again on an input built whole (see lazyArray.whole): an index past
// the end or a length made longer (holes), a negative index (a property "-1"
// to a plain array), an element deleted or set to undefined (a hole, or
// indistinguishable from one) unless the length is cut at once to drop it,
// as pop, shift and splice do; and, through the sandbox's guards and
// dynamicObjectError, freeze, seal, preventExtensions, defineProperty, and
// in strict code an own property that is not an index (goja refuses it).
//
// Two differences remain, which no trap of a dynamic array sees: outside
// strict code, goja drops a write of a property that is not an index
// (`a.foo = 1`, `a.__proto__ = p`, `a.toJSON = f`) silently, where a plain
// array keeps it; and a length that is not an integer (`a.length = 1.5`)
// reaches SetLen as its integer part, where a plain array throws a
// RangeError.

// lazyArrayCap is the least room a lazy array's values are made with when
// one is added: most arrays of an event are short.
const lazyArrayCap = 8

// lazyArray is the goja.DynamicArray of one JSON array of the payload.
type lazyArray struct {
	in *lazyInput
	// elems is the tape index of the first element's entry (tape.go): the
	// first read elements are the payload's, built from the tape when
	// first read; n is the array's length, the elements from read on the
	// handler's (in vals).
	elems   int32
	read, n int
	// vals are the elements built or written so far, nil where not built
	// yet; made at the first read or write, then n long.
	vals []goja.Value
	// hole is the index of the last element, just deleted or set to
	// undefined, while only a shorter length can follow (pop); -1 if none.
	hole int
}

// lazyArrayType is a lazy array's export type (see lazyObjectType).
func lazyArrayType() reflect.Type { return reflect.TypeFor[*lazyArray]() }

// array builds the lazy array of the tape segment seg.
func (in *lazyInput) array(seg int32) *goja.Object {
	n := int(in.tape[seg])
	return (&lazyArray{in: in, elems: seg + 1, read: n, n: n, hole: -1}).make()
}

// make wraps a in its JavaScript array.
func (a *lazyArray) make() *goja.Object {
	obj := a.in.rt.NewDynamicArray(a)
	if a.in.arrayProto == nil {
		a.in.arrayProto = obj.Prototype()
	}
	a.in.arrays = append(a.in.arrays, obj)
	return obj
}

// whole stops the run, to run it again on an input built whole: the handler
// asked the array for what only a plain array can be (a hole, a property
// that is not an index). The interrupt cannot be caught by the handler;
// dynamicObjectError recognises it.
func (a *lazyArray) whole() {
	a.in.wantWhole = true
	a.in.rt.Interrupt(kindWhole)
}

// observe is called by every access but a shorter length: a hole left by a
// delete may be seen (`i in a`, Object.keys, forEach skipping it).
func (a *lazyArray) observe() {
	if a.hole >= 0 {
		a.hole = -1
		a.whole()
	}
}

// Len is the array's length.
func (a *lazyArray) Len() int {
	a.observe()
	return a.n
}

// Get builds the element on its first read; nil (undefined, from the
// prototype) outside the array.
func (a *lazyArray) Get(idx int) goja.Value { //nolint:ireturn // goja values are an interface
	a.observe()
	if idx < 0 || idx >= a.n {
		return nil
	}
	if a.vals == nil {
		a.vals = make([]goja.Value, a.n)
	}
	if a.vals[idx] == nil && idx < a.read {
		e := a.elems + int32(idx*tapeElement) //nolint:gosec // G115: idx is below the tape's length
		v, err := a.in.value(a.in.tape[e], a.in.tape[e+1])
		if err != nil {
			// The text was checked whole before the run.
			panic(a.in.rt.NewGoError(err))
		}
		a.vals[idx] = v
	}
	return a.vals[idx]
}

// Set writes an element or appends one just past the end. An index further
// on (a hole before it), a negative one, or undefined written into the
// array (what a delete writes) but in its last element stop the run.
func (a *lazyArray) Set(idx int, val goja.Value) bool {
	a.observe()
	n := a.n
	if val == nil {
		val = goja.Undefined()
	}
	switch {
	case idx < 0 || idx > n:
		a.whole()
		return true
	case idx < n && goja.IsUndefined(val):
		if idx != n-1 {
			a.whole()
			return true
		}
		a.hole = idx
	}
	a.in.written = true
	if a.vals == nil {
		a.vals = make([]goja.Value, n, max(n+1, lazyArrayCap))
	}
	if idx == n {
		a.vals = append(a.vals, val)
		a.n++
		return true
	}
	a.vals[idx] = val
	return true
}

// SetLen cuts the array; a longer length (holes) or a length that keeps a
// deleted last element stops the run.
func (a *lazyArray) SetLen(n int) bool {
	if a.hole >= 0 {
		hole := a.hole
		a.hole = -1
		if n > hole {
			a.whole()
			return true
		}
	}
	cur := a.n
	switch {
	case n == cur:
		return true
	case n < 0 || n > cur:
		a.whole()
		return true
	}
	a.in.written = true
	a.n, a.read = n, min(a.read, n)
	if a.vals != nil {
		clear(a.vals[n:])
		a.vals = a.vals[:n]
	}
	return true
}
