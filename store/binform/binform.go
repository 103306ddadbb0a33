// Package binform holds the primitives of the hand-written binary forms
// of stored values (a job's form in dispatch, the Pebble data plane's
// records): varints, zig-zag varints, length-prefixed strings and bools,
// appended by a Writer and read back by a Reader whose first failure
// sticks. The forms themselves (which fields, in which order, how a time
// or an optional value is written) belong to their packages; this one
// only keeps the byte-level rules in one place, so the two never drift.
package binform

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrFormat is what every Reader failure wraps: the bytes are not the form
// the reader expects (cut short, an overlong varint, a bad byte).
var ErrFormat = errors.New("binary form does not decode")

// Writer appends the parts of a binary form to B.
type Writer struct {
	// B is the form written so far.
	B []byte
}

// Uvarint appends v as a uvarint.
func (w *Writer) Uvarint(v uint64) { w.B = binary.AppendUvarint(w.B, v) }

// Varint appends v as a zig-zag varint.
func (w *Writer) Varint(v int64) { w.B = binary.AppendVarint(w.B, v) }

// Str appends s's length as a uvarint, then its bytes.
func (w *Writer) Str(s string) {
	w.Uvarint(uint64(len(s)))
	w.B = append(w.B, s...)
}

// Bytes appends b as Str appends a string (nil and empty read back alike).
func (w *Writer) Bytes(b []byte) {
	w.Uvarint(uint64(len(b)))
	w.B = append(w.B, b...)
}

// Bool appends one byte: 1 for true, 0 for false.
func (w *Writer) Bool(v bool) {
	if v {
		w.B = append(w.B, 1)
		return
	}
	w.B = append(w.B, 0)
}

// Reader reads a binary form from a string or a byte slice. The first
// failure sticks: every later read returns a zero value, and Err says what
// failed. The values it returns share memory with the input (a substring,
// or a subslice).
type Reader[T ~string | ~[]byte] struct {
	rest T
	err  error
}

// NewReader returns a Reader of in (a value: embed or keep it in a
// variable; its methods take its address).
func NewReader[T ~string | ~[]byte](in T) Reader[T] { return Reader[T]{rest: in} }

// Err is the first failure, wrapping ErrFormat; nil while every read
// succeeded.
func (r *Reader[T]) Err() error { return r.err }

// Len is the number of bytes not read yet.
func (r *Reader[T]) Len() int { return len(r.rest) }

// Fail records a failure to read what (unless one is recorded already) and
// drops the rest of the input.
func (r *Reader[T]) Fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: bad %s", ErrFormat, what)
	}
	var zero T
	r.rest = zero
}

// Uvarint reads a uvarint (binary.Uvarint's rules: at most ten bytes, no
// overflow).
func (r *Reader[T]) Uvarint() uint64 {
	var v uint64
	for i := 0; i < len(r.rest) && i < binary.MaxVarintLen64; i++ {
		c := r.rest[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break
			}
			r.rest = r.rest[i+1:]
			return v | uint64(c)<<(7*i)
		}
		v |= uint64(c&0x7f) << (7 * i)
	}
	r.Fail("varint")
	return 0
}

// Varint reads a zig-zag varint.
func (r *Reader[T]) Varint() int64 {
	u := r.Uvarint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

// Take reads the next n bytes; what names them in the failure.
func (r *Reader[T]) Take(n uint64, what string) T {
	if n > uint64(len(r.rest)) {
		r.Fail(what)
		var zero T
		return zero
	}
	v := r.rest[:n]
	r.rest = r.rest[n:]
	return v
}

// Str reads what Writer.Str (or Writer.Bytes) wrote.
func (r *Reader[T]) Str() T { return r.Take(r.Uvarint(), "string") }

// Bool reads what Writer.Bool wrote; any byte but 0 and 1 fails.
func (r *Reader[T]) Bool() bool {
	b := r.Take(1, "bool")
	if len(b) == 1 {
		switch b[0] {
		case 0:
			return false
		case 1:
			return true
		}
	}
	r.Fail("bool")
	return false
}
