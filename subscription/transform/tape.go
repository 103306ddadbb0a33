package transform

import (
	"encoding/json"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// The scan that checks a lazily built payload's text (jsonParser with no
// runtime) records a tape of it: for every object and array, one segment of
// int32s, its entry count followed by its entries. An object's entry is a
// member (tapeMember values: the key's offsets, quotes included, whether the
// key has escapes, the offset of the value's text, and the tape index of the
// value's segment when the value is an object or an array, else -1); an
// array's is an element (tapeElement values: the offset of its text and its
// segment or -1). A value's segment is written before its parent's (the
// entries of an object being read wait on a scratch stack until it ends), so
// each segment is contiguous. Lazy objects and arrays (lazy.go,
// lazy_array.go) are then built from their segments without reading their
// text again.

// Sizes of a tape entry, in int32s.
const (
	tapeMember  = 5 // keyStart, keyEnd, escaped, valueStart, segment
	tapeElement = 2 // valueStart, segment
)

// maxTapeText is the longest text a tape is recorded for: a tape has at most
// about 1.5 entries per byte of text, all of them int32 offsets. Payloads are
// far smaller (HOOKLANE_MAX_EVENT_BYTES).
const maxTapeText = math.MaxInt32 / 2

// keptTapeEntries is the largest tape (and scratch stack) a runtime keeps for
// its next run.
const keptTapeEntries = 64 << 10

// tapeBuf holds the tape and the scratch stack it is built with, reused from
// run to run.
type tapeBuf struct {
	tape    []int32
	scratch []int32
}

// newLazyInput checks data as the whole build does (syntax, nesting, trailing
// data: the same errors) and builds the payload's value lazily over it,
// recording the tape in fresh buffers, sized for an event's text (about one
// entry per 4 bytes) so that they seldom grow.
func newLazyInput(rt *goja.Runtime, data []byte) (*lazyInput, goja.Value, error) { //nolint:ireturn // goja values are an interface
	b := tapeBuf{
		tape:    make([]int32, 0, min(len(data), keptTapeEntries)/3+16),
		scratch: make([]int32, 0, 64),
	}
	return b.lazyInput(rt, data)
}

// lazyInput is newLazyInput with the tape in b's buffers. A tape larger than
// keptTapeEntries stays with the run's input only, not with b.
func (b *tapeBuf) lazyInput(rt *goja.Runtime, data []byte) (*lazyInput, goja.Value, error) { //nolint:ireturn // goja values are an interface
	if len(data) > maxTapeText {
		return nil, nil, fmt.Errorf("%w: %d bytes is too long", errInputJSON, len(data))
	}
	scan := jsonParser{data: data, canonical: true, record: true, tape: b.tape[:0], scratch: b.scratch[:0]}
	start := scan.valueStart(0)
	_, err := scan.value(0)
	if err == nil {
		if scan.space(); scan.i != len(data) {
			err = scan.fail("trailing data")
		}
	}
	b.tape, b.scratch = scan.tape, scan.scratch[:0]
	if cap(b.tape) > keptTapeEntries {
		b.tape = nil
	}
	if cap(b.scratch) > keptTapeEntries {
		b.scratch = nil
	}
	if err != nil {
		return nil, nil, err
	}
	in := &lazyInput{rt: rt, data: data, tape: scan.tape, canonical: scan.canonical}
	in.objectProto = rt.NewObject().Prototype()
	v, err := in.value(start, scan.last)
	if err != nil {
		return nil, nil, err
	}
	if obj, ok := v.(*goja.Object); ok {
		in.root = obj // a lazy object or array: the text is the one value
	}
	return in, v, nil
}

// tapeBase is where the entries of the object or array starting at p.i
// begin on the scratch stack.
func (p *jsonParser) tapeBase() int {
	return len(p.scratch)
}

// tapeSeal ends the object or array whose entries (of size values each)
// start at base on the scratch stack: its segment is appended to the tape,
// and p.last is its index.
func (p *jsonParser) tapeSeal(base, size int) {
	if !p.record {
		return
	}
	p.last = int32(len(p.tape))                                //nolint:gosec // G115: a tape is at most about 1.5 × maxTapeText entries
	p.tape = append(p.tape, int32((len(p.scratch)-base)/size)) //nolint:gosec // G115: as above
	p.tape = append(p.tape, p.scratch[base:]...)
	p.scratch = p.scratch[:base]
}

// valueStart, on a scan recording a tape, skips the whitespace before the
// value at depth (unless value will refuse the depth before reading it, so
// that its error names the same byte) and returns the value's offset, p.last
// set to -1 for a scalar.
func (p *jsonParser) valueStart(depth int) int32 {
	if !p.record {
		return 0
	}
	if depth <= maxJSONNesting {
		p.space()
	}
	p.last = -1
	return int32(p.i) //nolint:gosec // G115: the text is at most maxTapeText bytes
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// value builds the value whose text starts at off: a lazy object or array
// from its tape segment seg, else a scalar from its text.
func (in *lazyInput) value(off, seg int32) (goja.Value, error) { //nolint:ireturn // goja values are an interface
	switch {
	case seg < 0:
		p := jsonParser{rt: in.rt, data: in.data, i: int(off)}
		return p.value(0)
	case in.data[off] == '{':
		return in.object(seg)
	default:
		return in.array(seg), nil
	}
}

// key is the key of the member at m in the tape.
func (in *lazyInput) key(m int32) (string, error) {
	a, b := in.tape[m], in.tape[m+1]
	if in.tape[m+2] == 0 {
		key := string(in.data[a+1 : b-1])
		if !utf8.ValidString(key) {
			// Each invalid byte is U+FFFD, as in the key goja makes of it
			// for a plain object.
			key = string([]rune(key))
		}
		return key, nil
	}
	var s string
	if err := json.Unmarshal(in.data[a:b], &s); err != nil {
		return "", fmt.Errorf("%w: %w", errInputJSON, err)
	}
	return s, nil
}
