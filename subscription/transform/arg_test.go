package transform

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// argHandlers exercise what a handler does with its argument and its
// headers: reads, writes, deletes, key order, enumeration, spread,
// stringify, descriptors, prototypes, and what only a plain object can do.
func argHandlers() []string {
	return []string{
		`w.payload = {keys: Object.keys(w), hkeys: Object.keys(w.headers)}; return w`,
		`w.payload = JSON.parse(JSON.stringify(w)); return w`,
		`w.payload = {...w, payload: null}; return w`,
		`var out = []; for (var k in w) out.push(k); w.payload = out; return w`,
		`w.payload = {has: "url" in w, own: w.hasOwnProperty("method"), desc: Object.getOwnPropertyDescriptor(w, "attempt"),
			hdesc: Object.getOwnPropertyDescriptor(w.headers, "x-team") || null,
			proto: Object.getPrototypeOf(w) === Object.prototype, hproto: Object.getPrototypeOf(w.headers) === Object.prototype,
			str: Object.prototype.toString.call(w), type: typeof w.attempt + typeof w.cancel}; return w`,
		`delete w.method; delete w.url; delete w.headers; w.payload = Object.keys(w); return w`,
		`delete w.method; w.method = "PUT"; w.payload = Object.keys(w); return w`,
		`w["0"] = 1; w["10"] = 2; w["2"] = 3; w.payload = Object.keys(w); return w`,
		`w.headers["X-Upper"] = "v"; w.headers["x-team"] = "platform"; w.headers["1"] = "digits"; return w`,
		`w.headers["X-Team"] = "again"; return w`,
		`delete w.headers["x-team"]; w.headers.added = "a"; return w`,
		`w.headers = {"content-type": "text/plain"}; return w`,
		`w.headers = null; return w`,
		`w.headers["x-n"] = 1; return w`,
		`w.headers["bad name"] = "x"; return w`,
		`w.headers.authorization = "x"; return w`,
		`w.url = undefined; w.method = undefined; return w`,
		`w.url = w.url + "/more"; return w`,
		`w.method = "GET"; return w`,
		`w.cancel = w.attempt > 1; return w`,
		`delete w.method; Object.setPrototypeOf(w, {method: "PATCH"}); return w`,
		`w.__proto__ = {toJSON: function () { return "tj" }}; w.payload = JSON.stringify(w); return w`,
		`Object.freeze(w); w.method = "PUT"; w.payload = {frozen: Object.isFrozen(w)}; return w`,
		`Object.freeze(w.headers); w.headers.x = "y"; return w`,
		`Object.seal(w); delete w.method; return w`,
		`Object.preventExtensions(w.headers); w.headers.x = "y"; w.payload = Object.isExtensible(w.headers); return w`,
		`Object.defineProperty(w, "method", {get: function () { return "PUT" }, enumerable: true}); return w`,
		`Object.defineProperty(w.headers, "x-g", {value: "v", enumerable: false}); w.payload = Object.keys(w.headers); return w`,
		`w[Symbol.iterator] = 1; return w`,
		`return {payload: w.payload, headers: w.headers, url: w.url}`,
		`var h = w.headers; w.headers = {}; w.payload = {same: h === w.headers, again: h === h}; return w`,
		`return w.headers`,
	}
}

// The argument made lazily (arg.go) behaves as the plain one: every handler
// returns the same result, or fails the same way, as on an input built
// whole — with a url and without (a destination), with no header and with
// several.
func TestRunLazyArgumentSameAsWhole(t *testing.T) {
	t.Parallel()
	webhook := sampleInput()
	destination := sampleInput()
	destination.URL = ""
	headers := sampleInput()
	headers.Headers = map[string]string{"x-b": "2", "x-a": "1", "9": "n", "x-team": "orders"}
	none := sampleInput()
	none.Headers = nil
	requireSameAsWhole(t, argHandlers(), []Input{webhook, destination, headers, none}, nil)
}

// requireSameAsWhole runs every handler body (of a handler of w) on every
// input lazily and on an input built whole, and requires the same result
// or the same error. A handler in gaps, on an array payload, need only
// succeed lazily (sloppyNamedWrites).
func requireSameAsWhole(t *testing.T, bodies []string, inputs []Input, gaps map[int]bool) {
	t.Helper()
	lazy := testEngine(Config{})
	whole := testEngine(Config{})
	whole.whole = true
	// goja prints some objects it cannot convert with their addresses.
	addr := regexp.MustCompile(`0x[0-9a-f]+`)
	for i, body := range bodies {
		prog, err := Compile("function handler(w) {\n" + body + "\n}")
		require.NoError(t, err, body)
		for j, in := range inputs {
			name := fmt.Sprintf("handler %d on input %d (%.40s)", i, j, in.Payload)
			want, wantErr := whole.Run(t.Context(), prog, in)
			got, gotErr := lazy.Run(t.Context(), prog, in)
			if wantErr != nil {
				require.Error(t, gotErr, name)
				require.Equal(t, addr.ReplaceAllString(wantErr.Error(), "0x"), addr.ReplaceAllString(gotErr.Error(), "0x"), name)
				continue
			}
			require.NoError(t, gotErr, name)
			if gaps[i] && len(in.Payload) > 0 && in.Payload[0] == '[' {
				continue
			}
			require.Equal(t, want, got, name)
		}
	}
}

// The handler's wrapper function is made once per runtime and kept
// (sandbox.handlerMaker): what a run leaves on it, or on its prototype,
// is not there for the next run.
func TestRunHandlerMakerKeepsNoState(t *testing.T) {
	t.Parallel()
	e := testEngine(Config{PoolSize: 1}) // one runtime: every run shares it
	src := `var maker = arguments.callee;
	function handler(w) {
		var seen = {x: typeof maker.x, y: typeof maker.prototype.y, z: typeof new maker().z};
		maker.x = 1;
		maker.prototype.y = 2;
		try { Object.defineProperty(maker, "z", {value: 3}); } catch (e) {}
		maker.prototype.constructor = null;
		return {payload: seen};
	}`
	prog, err := Compile(src)
	require.NoError(t, err)
	for range 3 {
		out, err := e.Run(t.Context(), prog, sampleInput())
		require.NoError(t, err)
		require.JSONEq(t, `{"x":"undefined","y":"undefined","z":"undefined"}`, string(out.Payload))
	}
}
