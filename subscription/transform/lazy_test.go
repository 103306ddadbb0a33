package transform

import (
	"encoding/json"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/require"
)

// lazyPayloads are inputs the lazy payload must read as JSON.parse does:
// canonical and not, index keys, repeated keys, keys Object.prototype has,
// escapes, every JSON type at the root.
func lazyPayloads() []string {
	return []string{
		benchEvent,
		"{\n  \"data\": {\"b\": 1, \"a\": [ {\"x\": 1.0}, 2 ] },\n  \"id\": \"e1\"\n}",
		`{"b":1,"10":2,"a":3,"2":4,"01":5,"4294967295":6,"4294967294":7,"data":{"9":1,"z":2}}`,
		`{"a":1,"b":{"c":1},"a":{"d":2},"data":{"k":1,"k":2}}`,
		`{"__proto__":{"x":1},"toString":"t","constructor":1,"hasOwnProperty":2,"data":{"__proto__":null}}`,
		`{"q":"say \"hi\"\\ \u00e9 \/","e":1e2,"neg":-0,"big":12345678901234567890,"data":{"s":"\u2028"}}`,
		`[{"a":1},{"a":2,"b":[{"c":3}]},"s",null,true]`,
		`"just a string"`,
		`42`,
		`null`,
		`{}`,
		`{"data":{}}`,
	}
}

// lazyHandlers exercise what a handler does with its payload: reads,
// writes, deletes, key order, `in`, own properties, enumeration, spread,
// stringify, descriptors, prototypes, identity, and what only a plain object
// can do (freeze, seal, preventExtensions, accessors, Symbol keys), which
// runs the handler again on a plain input.
func lazyHandlers() []string {
	return []string{
		`return w`,
		`w.payload = {id: w.payload.id, d: w.payload.data}; return w`,
		`var p = w.payload; w.payload = {keys: Object.keys(p), has: "data" in p, own: p.hasOwnProperty("data"),
			proto: Object.getPrototypeOf(p) === Object.prototype, toStr: Object.prototype.toString.call(p),
			desc: Object.getOwnPropertyDescriptor(p, "data") || null, type: typeof p}; return w`,
		`var p = w.payload, out = []; for (var k in p) out.push(k); w.payload = out; return w`,
		`w.payload = Object.assign({}, w.payload, {added: 1}); return w`,
		`w.payload = {...w.payload, spread: true}; return w`,
		`w.payload = JSON.stringify(w.payload); return w`,
		`w.payload = JSON.parse(JSON.stringify(w.payload)); return w`,
		`var p = w.payload; if (p && typeof p === "object") { p.added = {n: 1}; p["3"] = "three"; } return w`,
		`var p = w.payload; if (p && typeof p === "object") { var k = Object.keys(p)[0]; delete p[k]; p[k] = "again"; } return w`,
		`var p = w.payload; if (p && p.data) { p.data.extra = [1, 2]; delete p.data.orderId; } return w`,
		`var p = w.payload; if (p && p.data) { var d = p.data; p.data = 1; p.data = d; } return w`,
		`var p = w.payload; w.payload = {same: p !== null && typeof p === "object" && p.data === p.data}; return w`,
		`var p = w.payload; if (Array.isArray(p)) { p.push(p[0]); p[0].a = 9; } return w`,
		`var p = w.payload; if (p && typeof p === "object") { p.__proto__ = {toJSON: function () { return "tj"; }}; } return w`,
		`var p = w.payload; if (p && typeof p === "object") { Object.setPrototypeOf(p, null); } return w`,
		`var p = w.payload; if (p && typeof p === "object") { p.toString = function () { return "x"; }; w.payload = {s: String(p), k: Object.keys(p)}; } return w`,
		`var p = w.payload; if (p && typeof p === "object") { w.payload = {e: Object.entries(p).length, v: Object.values(p).length}; } return w`,
		`var p = w.payload; if (p && typeof p === "object") { Object.freeze(p); p.late = 1; w.payload = {frozen: Object.isFrozen(p), p: p}; } return w`,
		`"use strict"; var p = w.payload; if (p && typeof p === "object") { Object.seal(p); p.late = 1; } return w`,
		`var p = w.payload; if (p && typeof p === "object") { Object.preventExtensions(p); p.late = 1; w.payload = {ext: Object.isExtensible(p), p: p}; } return w`,
		`var p = w.payload; if (p && typeof p === "object") { Object.defineProperty(p, "g", {get: function () { return 7; }, enumerable: true}); } return w`,
		`var p = w.payload; if (p && typeof p === "object") { Object.defineProperties(p, {h: {value: 1, enumerable: false}}); w.payload = {keys: Object.keys(p), h: p.h}; } return w`,
		`var p = w.payload; if (p && typeof p === "object") { p[Symbol.iterator] = 1; w.payload = {sym: typeof p[Symbol.iterator]}; } return w`,
		`var p = w.payload; if (p && typeof p === "object") { p(); } return w`,
		`var p = w.payload; if (p && typeof p === "object") { w.payload = {i: ({}) instanceof p}; } return w`,
		`var p = w.payload; if (p && typeof p === "object" && p.data) { var d = p.data; if (Object.isFrozen(d)) throw new Error("frozen"); Object.freeze(d); } return w`,
	}
}

// The lazily built payload behaves as the plain one: every handler on every
// payload returns the same result, or fails the same way, as on an input
// built whole.
func TestRunLazyPayloadSameAsWhole(t *testing.T) {
	t.Parallel()
	lazy := testEngine(Config{})
	whole := testEngine(Config{})
	whole.whole = true
	for i, body := range lazyHandlers() {
		prog, err := Compile("function handler(w) {\n" + body + "\n}")
		require.NoError(t, err, body)
		for _, payload := range lazyPayloads() {
			in := sampleInput()
			in.Payload = json.RawMessage(payload)
			name := fmt.Sprintf("handler %d on %.40s", i, payload)
			want, wantErr := whole.Run(t.Context(), prog, in)
			got, gotErr := lazy.Run(t.Context(), prog, in)
			if wantErr != nil {
				// goja prints some objects it cannot convert with their
				// addresses.
				addr := regexp.MustCompile(`0x[0-9a-f]+`)
				require.Error(t, gotErr, name)
				require.Equal(t, addr.ReplaceAllString(wantErr.Error(), "0x"), addr.ReplaceAllString(gotErr.Error(), "0x"), name)
				continue
			}
			require.NoError(t, gotErr, name)
			require.Equal(t, want, got, name)
		}
	}
}

// An untouched payload is the input's bytes, changed neither in text nor
// in its PayloadChanged flag; one written to and restored is unchanged too.
func TestRunLazyPayloadUntouched(t *testing.T) {
	t.Parallel()
	e := testEngine(Config{})
	for _, src := range []string{
		`function handler(w) { var id = w.payload.data.orderId; w.headers["x-id"] = id; return w }`,
		`function handler(w) { var d = w.payload.data; d.orderId = "x"; d.orderId = "o-42"; return w }`,
	} {
		out, err := run(t, e, src, sampleInput())
		require.NoError(t, err)
		require.False(t, out.PayloadChanged, src)
		require.JSONEq(t, sampleEvent, string(out.Payload))
	}
	in := benchInput()
	out, err := run(t, e, `function handler(w) { w.payload.data.tags.push("new"); return w }`, in)
	require.NoError(t, err)
	require.True(t, out.PayloadChanged, "an array changed in place")
	out, err = run(t, e, `function handler(w) { Object.setPrototypeOf(w.payload.data, {toJSON: function () { return 1 }}); return w }`, in)
	require.NoError(t, err)
	require.True(t, out.PayloadChanged, "a prototype with toJSON")
	require.JSONEq(t, `1`, string(mustField(t, out.Payload, "data")))
}

// A handler that reads one field builds the objects on its way, not the
// rest of the payload.
func TestLazyPayloadBuildsWhatIsRead(t *testing.T) {
	t.Parallel()
	sb, err := newSandbox(1<<20, 1<<20)
	require.NoError(t, err)
	li, v, err := newLazyInput(sb.rt, []byte(benchEvent))
	require.NoError(t, err)
	read := func(src string) goja.Value {
		f, err := sb.rt.RunString("(function (p) { return " + src + " })")
		require.NoError(t, err)
		call, ok := goja.AssertFunction(f)
		require.True(t, ok)
		got, err := call(goja.Undefined(), v)
		require.NoError(t, err)
		return got
	}
	require.Equal(t, "ada@example.com", read(`p.data.customer.email`).String())
	require.Len(t, li.objects, 3, "the payload, data and customer; not address, shipping or the items")
	require.False(t, li.arrays)
	require.True(t, li.untouched(v))
	require.Equal(t, int64(3), read(`p.data.tags.length`).ToInteger())
	require.True(t, li.arrays)
	require.False(t, li.untouched(v), "an array's elements may have changed unseen")
}

// A handler that asks the lazy payload for what only a plain object can do
// is run again on a plain input under the same time limit: looping after it
// still ends in a timeout.
func TestRunLazyPayloadRunAgainKeepsTheLimit(t *testing.T) {
	t.Parallel()
	e := testEngine(Config{Timeout: 200 * time.Millisecond, WallLimit: 10 * time.Second})
	_, err := run(t, e, `function handler(w) { Object.freeze(w.payload); for (;;) {} }`, sampleInput())
	requireRunError(t, err, KindTimeout, "longer than")
	out, err := run(t, e, `function handler(w) { Object.freeze(w.payload.data); w.payload.data.total = 1; return w }`, sampleInput())
	require.NoError(t, err)
	require.False(t, out.PayloadChanged, "the write to a frozen object is ignored, as on a plain input")
	require.Equal(t, 0, e.active())
}

// Keys are ordered as a plain object orders them.
func TestLazyObjectKeys(t *testing.T) {
	t.Parallel()
	o := &lazyObject{in: &lazyInput{}}
	for _, k := range []string{"b", "10", "a", "2", "01", "4294967295", "4294967294", "-1", "1.5"} {
		o.Set(k, goja.Undefined())
	}
	require.Equal(t, []string{"2", "10", "4294967294", "b", "a", "01", "4294967295", "-1", "1.5"}, o.Keys())
	o.Delete("b")
	o.Set("b", goja.Undefined())
	require.Equal(t, []string{"2", "10", "4294967294", "a", "01", "4294967295", "-1", "1.5", "b"}, o.Keys())
	for i := range 40 {
		o.Set(fmt.Sprintf("k%d", i), goja.Undefined())
	}
	require.True(t, o.Has("k39"))
	o.Delete("k0")
	require.False(t, o.Has("k0"))
	require.True(t, o.Has("k39"), "the index follows a delete")
}

func mustField(t *testing.T, js json.RawMessage, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(js, &m))
	return m[key]
}
