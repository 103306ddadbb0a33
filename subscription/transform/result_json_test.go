package transform

import (
	"errors"
	"testing"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/require"
)

// resultJSONCases are payload expressions whose JSON the result writer must
// write exactly as the guarded JSON.stringify does, or fail alike.
func resultJSONCases() []string {
	return []string{
		`null`, `true`, `false`, `0`, `-0`, `42`, `-7`, `1.5`, `1e21`, `1e-7`, `123456789012345680000`, `NaN`, `-Infinity`,
		`2147483648`, `9007199254740993`, `0.1 + 0.2`,
		`""`, `"plain"`, `"quote \" backslash \\ slash /"`, `"\b\f\n\r\t\u0000\u001f\u007f"`,
		`"é ü — \u65e5\u672c 😀"`, `"\ud800"`, `"a\udc00b"`, `"\ud83d\ude00\ud83d"`, `"\uFFFD real replacement"`, `"\u2028\u2029"`,
		`undefined`, `function () {}`, `Symbol("s")`, `Object(Symbol("s"))`,
		`{}`, `[]`, `[[]]`, `{a: {}}`, `{a: 1, b: "two", c: [3, {d: null}]}`,
		`{u: undefined, f: function () {}, s: Symbol("x"), k: 1}`, `{u: undefined}`, `[undefined, function () {}, Symbol("x")]`,
		`[1, , 3]`, `new Array(3)`, `(function () { var a = [1, 2]; a.x = 3; return a })()`,
		`{"é": 1, "\n": 2, "\"": 3, "": 4, "\u65e5\u672c": 5}`, `{"\ud800": 1, b: 2}`, `{"k\uFFFD": 1}`,
		`{2: "b", 1: "a", x: "x", 0: "z"}`,
		`new Number(3)`, `new String("boxed")`, `new Boolean(false)`, `Object(1.5)`, `[new Number(1), new String("s"), new Boolean(true)]`,
		`new Date(0)`, `{d: new Date(86400000)}`, `{toJSON: function (k) { return "key=" + k }}`,
		`{a: {toJSON: function (k) { return [k, 1] }}}`, `[{toJSON: function (k) { return k }}]`, `{toJSON: 5, v: 1}`,
		`{toJSON: function () { return undefined }}`, `{a: {toJSON: function () { return function () {} }}}`,
		`{get g() { return {n: 1} }, v: 2}`, `Object.defineProperty({v: 1}, "hidden", {value: 2, enumerable: false})`,
		`Object.create({inherited: 1})`, `Object.create(null)`, `(function () { var o = Object.create(null); o.z = 1; return o })()`,
		`/re/g`, `new Error("boom")`, `(function () { return arguments })(1, "a")`, `Math`, `JSON`,
		`JSON.rawJSON("12.50")`, `{raw: JSON.rawJSON('"s"')}`, `[JSON.rawJSON("null")]`,
		`(function () { var a = {}; a.self = a; return a })()`, `(function () { var a = []; a.push(a); return a })()`,
		`(function () { var s = {}; return {x: s, y: s, z: [s, s]} })()`,
		`1n`, `{b: 1n}`, `Object(1n)`,
		`(function () { var o = {}, c = o; for (var i = 0; i < 999; i++) { c.n = {}; c = c.n } return o })()`,
		`(function () { var o = {}, c = o; for (var i = 0; i < 1000; i++) { c.n = {}; c = c.n } return o })()`,
		`(function () { var a = [], c = a; for (var i = 0; i < 1000; i++) { var n = []; c.push(n); c = n } return a })()`,
		`(function () { var a = []; a.length = 5000; return a })()`, `(function () { var a = []; a.length = 20000; return a })()`,
		`(function () { var a = []; a.length = 1e7; return a })()`,
		`(function () { var s = "x"; for (var i = 0; i < 17; i++) s += s; return s })()`,
		`(function () { var s = "x"; for (var i = 0; i < 17; i++) s += s; return {k: s} })()`,
		`(function () { var o = {}; for (var i = 0; i < 70000; i++) o["k" + i] = undefined; return o })()`,
		`(function () { var o = {}; o["x".repeat(70000)] = 1; return o })()`,
		`{get boom() { throw new RangeError("from a getter") }}`,
		`{toJSON: function () { throw new Error("from toJSON") }}`,
	}
}

// The result writer writes what the guarded JSON.stringify writes, byte for
// byte, and fails where it fails with the same error (nesting, cycles,
// BigInt, the size budget, a throwing getter) — but that it counts the
// size budget in bytes written, where the guarded stringify estimates; the
// size budget is that of a 64 KiB result.
func TestResultWriterIsStringify(t *testing.T) {
	t.Parallel()
	e := testEngine(Config{MaxResultBytes: 1 << 16, MaxMemory: 1 << 28})
	sb, err := newSandbox(e.maxLen, e.maxStr)
	require.NoError(t, err)
	eval := func(expr string) goja.Value {
		v, err := sb.rt.RunString("(" + expr + ")")
		require.NoError(t, err, expr)
		return v
	}
	for _, expr := range resultJSONCases() {
		got, gotErr := e.payloadJSON(sb, eval(expr), 1<<16)
		require.False(t, sb.result.giveUp && gotErr == nil && !hasReplacementKey(expr), "the writer gave up on %s", expr)
		want, wantErr := guardedJSON(sb, eval(expr), 1<<16)
		var tooLarge *RunError
		if gotErr == nil && errors.As(wantErr, &tooLarge) && tooLarge.Kind == KindTooLarge {
			// The guarded stringify counts an estimate (24 bytes for a
			// number, a boolean, a null or a left-out member); the writer
			// counts the bytes.
			require.LessOrEqual(t, len(got), 1<<16, expr)
			continue
		}
		if wantErr != nil || gotErr != nil {
			require.Error(t, wantErr, expr)
			require.Error(t, gotErr, expr)
			var wantRun, gotRun *RunError
			if errors.As(wantErr, &wantRun) {
				require.ErrorAs(t, gotErr, &gotRun, expr)
				require.Equal(t, wantRun.Kind, gotRun.Kind, expr)
				continue
			}
			require.Equal(t, runErrorOf(wantErr, e.cfg).Error(), runErrorOf(gotErr, e.cfg).Error(), expr)
			continue
		}
		require.Equal(t, want == nil, got == nil, "%s: %q %q", expr, want, got)
		require.Equal(t, string(want), string(got), expr)
	}
}

func hasReplacementKey(expr string) bool {
	return expr == `{"\ud800": 1, b: 2}` || expr == `{"k\uFFFD": 1}`
}

// guardedJSON is the result's JSON as the guarded stringify writes it.
func guardedJSON(sb *sandbox, v goja.Value, maxBytes int64) ([]byte, error) {
	b := &budget{s: sb, max: maxBytes, what: "the result"}
	sb.resultBudget = b
	js, err := sb.serialize(goja.Undefined(), v)
	sb.resultBudget = nil
	if err != nil {
		if b.exceeded {
			return nil, &RunError{Kind: KindTooLarge}
		}
		return nil, err
	}
	if js == nil || goja.IsUndefined(js) {
		return nil, nil
	}
	return []byte(js.String()), nil
}
