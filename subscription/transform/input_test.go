package transform

import (
	"testing"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/require"
)

// A payload the parser calls canonical is exactly what JSON.stringify
// prints for the value built (the engine then skips stringifying it);
// the texts it cannot vouch for are not called canonical.
func TestJSONToValueCanonical(t *testing.T) {
	t.Parallel()
	sb, err := newSandbox(1<<20, 1<<20)
	require.NoError(t, err)
	tests := []struct {
		text string
		want bool
	}{
		{benchEvent, true},
		{`{"a":1,"b":[true,false,null],"c":{"d":"e"}}`, true},
		{`"plain"`, true},
		{`null`, true},
		{`{"q":"say \"hi\"\\ \n\r\t\b\f"}`, true},
		{`{"price":129.95,"tax":0.000001,"big":123456789012345,"neg":-42,"f":-0.5}`, true},
		{`{"name":"Zoë","city":"Zürich","emoji":"😀"}`, true},
		{`{"a": 1}`, false},
		{` {"a":1}`, false},
		{`{"a":-0}`, false},
		{`{"a":1.0}`, false},
		{`{"a":1e2}`, false},
		{`{"a":1e21}`, false},
		{`{"a":1e-7}`, false},
		{`{"a":12345678901234567890}`, false},
		{`{"a":5e-324}`, false},
		{`{"a":"\u00e9"}`, false},
		{`{"a":"\/"}`, false},
		{`{"a":"\u0001"}`, false},
		{"{\"a\":\"\u2028\"}", false},
		{`{"b":1,"10":2}`, false},
		{`{"a":1,"a":2}`, false},
		{`{"__proto__":1}`, true},
		{`{"toString":1}`, true},
	}
	for _, tt := range tests {
		v, canonical, err := jsonToValue(sb.rt, []byte(tt.text))
		require.NoError(t, err, tt.text)
		require.Equal(t, tt.want, canonical, tt.text)
		js, err := sb.origStringify(goja.Undefined(), v)
		require.NoError(t, err)
		if canonical {
			require.Equal(t, tt.text, js.String(), "a canonical text is what JSON.stringify prints")
		}
	}
}

// A handler that changes the input payload in place changes it, whether the
// parser found the input canonical or not; one that returns it untouched
// leaves it unchanged.
func TestRunPayloadChangedInPlace(t *testing.T) {
	t.Parallel()
	e := testEngine(Config{})
	for _, payload := range []string{`{"a":1,"b":2}`, `{"a": 1, "b": 2}`} {
		in := sampleInput()
		in.Payload = []byte(payload)
		out, err := run(t, e, `function handler(w) { w.payload.a = 5; return w; }`, in)
		require.NoError(t, err)
		require.True(t, out.PayloadChanged, payload)
		require.JSONEq(t, `{"a":5,"b":2}`, string(out.Payload))

		out, err = run(t, e, `function handler(w) { w.payload.a = w.payload.a; return w; }`, in)
		require.NoError(t, err)
		require.False(t, out.PayloadChanged, payload)
	}
}

// A payload key that Object.prototype also has is an own data property of
// the payload, as JSON.parse makes it: not the prototype's, not a change of
// prototype, and kept in its place.
func TestRunInputKeysOfObjectPrototype(t *testing.T) {
	t.Parallel()
	e := testEngine(Config{})
	in := sampleInput()
	in.Payload = []byte(`{"hasOwnProperty":1,"__proto__":{"a":1},"toString":"x","constructor":null,"plain":2}`)
	out, err := run(t, e, `function handler(w) {
		var p = w.payload, own = function (k) { return Object.prototype.hasOwnProperty.call(p, k) };
		return {payload: [Object.keys(p), Object.getPrototypeOf(p) === Object.prototype,
			own("hasOwnProperty") && own("__proto__") && own("toString") && own("constructor"), p.hasOwnProperty, p.toString, p.a === undefined]};
	}`, in)
	require.NoError(t, err)
	require.JSONEq(t, `[["hasOwnProperty","__proto__","toString","constructor","plain"],true,true,1,"x",true]`, string(out.Payload))

	// The same for the headers object: a header named like a prototype's
	// key is an own property too.
	in.Headers = map[string]string{"constructor": "c", "__proto__": "p", "x-team": "orders"}
	out, err = run(t, e, `function handler(w) {
		var h = w.headers;
		return {payload: [Object.keys(h), Object.getPrototypeOf(h) === Object.prototype, h.constructor, h.__proto__]};
	}`, in)
	require.NoError(t, err)
	require.JSONEq(t, `[["__proto__","constructor","x-team"],true,"c","p"]`, string(out.Payload))
}

// The scan's fast path for numbers agrees with the slow one: a number it
// calls plain is one JSON.stringify writes as it is.
func TestPlainNumber(t *testing.T) {
	t.Parallel()
	sb, err := newSandbox(1<<20, 1<<20)
	require.NoError(t, err)
	for _, text := range []string{
		"0", "-0", "7", "-42", "100", "123456789012345", "1234567890123456", "01", "-01",
		"0.5", "-0.5", "0.50", "1.0", "1.", ".5", "129.95", "0.000001", "0.0000001", "-0.000001",
		"12345678901234.5", "1234567890123.45", "123456789012345.6", "1e2", "1E2", "1.5e3", "-", "0.1234567890123",
		"0.30000000000000004", "9007199254740993",
	} {
		v, canonical, err := jsonToValue(sb.rt, []byte(text))
		if err != nil {
			require.False(t, plainNumber([]byte(text)), text)
			continue
		}
		js, err := sb.origStringify(goja.Undefined(), v)
		require.NoError(t, err)
		if plainNumber([]byte(text)) {
			require.Equal(t, text, js.String(), text)
			require.True(t, canonical, text)
		}
		scan := jsonParser{data: []byte(text), canonical: true}
		_, err = scan.value(0)
		require.NoError(t, err, text)
		require.Equal(t, canonical, scan.canonical, "scan and build agree on %s", text)
	}
}
