package transform

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const sampleEvent = `{"specversion":"1.0","id":"ev1","source":"/shop","type":"shop.order.created",` +
	`"datacontenttype":"application/json","data":{"orderId":"o-42","total":12.5,"customer":{"name":"Ada"}}}`

func sampleInput() Input {
	return Input{
		Method: "POST", URL: "https://receiver.example.com/hooks",
		Headers: map[string]string{"x-team": "orders"}, Payload: json.RawMessage(sampleEvent),
		EventType: "shop.order.created", EventID: "01J0EVENT", Attempt: 2,
	}
}

// run compiles src and runs it on a fresh engine with the sample input.
func run(t *testing.T, e *Engine, src string, in Input) (Output, error) {
	t.Helper()
	prog, err := Compile(src)
	require.NoError(t, err)
	return e.Run(t.Context(), prog, in)
}

func requireRunError(t *testing.T, err error, kind Kind, contains string) RunError {
	t.Helper()
	var re *RunError
	require.ErrorAs(t, err, &re)
	require.Equal(t, kind, re.Kind, re.Error())
	require.Contains(t, re.Message, contains)
	require.LessOrEqual(t, len(re.Message), maxErrorBytes)
	return *re
}

func TestRunInput(t *testing.T) {
	t.Parallel()
	src := `function handler(w) {
		return {payload: {method: w.method, url: w.url, headers: w.headers, eventType: w.eventType,
			eventId: w.eventId, attempt: w.attempt, cancel: w.cancel, order: w.payload.data.orderId,
			hasUrl: "url" in w}};
	}`
	out, err := run(t, testEngine(Config{}), src, sampleInput())
	require.NoError(t, err)
	require.JSONEq(t, `{"method":"POST","url":"https://receiver.example.com/hooks","headers":{"x-team":"orders"},
		"eventType":"shop.order.created","eventId":"01J0EVENT","attempt":2,"cancel":false,"order":"o-42","hasUrl":true}`,
		string(out.Payload))

	in := sampleInput()
	in.URL = ""
	out, err = run(t, testEngine(Config{}), `function handler(w) { return {payload: "url" in w} }`, in)
	require.NoError(t, err)
	require.Equal(t, "false", string(out.Payload), "a destination's input has no url")
}

func TestRunOutputMembers(t *testing.T) {
	t.Parallel()
	src := `function handler(w) {
		return {method: "PUT", url: "https://receiver.example.com/orders/" + w.payload.data.orderId,
			headers: {"X-Order": w.payload.data.orderId, "content-type": "application/vnd.partner+json"},
			payload: {id: w.payload.data.orderId, amount: w.payload.data.total}, cancel: false};
	}`
	out, err := run(t, testEngine(Config{}), src, sampleInput())
	require.NoError(t, err)
	require.Equal(t, "PUT", out.Method)
	require.Equal(t, "https://receiver.example.com/orders/o-42", out.URL)
	require.Equal(t, map[string]string{"x-order": "o-42", "content-type": "application/vnd.partner+json"}, out.Headers,
		"names lower-case; x-team was left out of the object, so it is not sent")
	require.JSONEq(t, `{"id":"o-42","amount":12.5}`, string(out.Payload))
	require.True(t, out.PayloadChanged)
	require.False(t, out.PayloadIsString)
	require.Equal(t, "application/vnd.partner+json", out.ContentType(), "a content-type the handler sets wins")
	require.False(t, out.Cancel)

	out, err = run(t, testEngine(Config{}), `function handler(w) { return {cancel: true} }`, sampleInput())
	require.NoError(t, err)
	require.True(t, out.Cancel)
}

func TestRunLeftOutMembersKeepInput(t *testing.T) {
	t.Parallel()
	in := sampleInput()
	for _, src := range []string{
		`function handler(w) { return {} }`,
		`function handler(w) { return w }`,
		`function handler(w) { return {payload: w.payload, method: undefined} }`,
		`function handler(w) { w.payload = JSON.parse(JSON.stringify(w.payload)); return w }`,
	} {
		out, err := run(t, testEngine(Config{}), src, in)
		require.NoError(t, err, src)
		require.Equal(t, in.Method, out.Method, src)
		require.Equal(t, in.URL, out.URL, src)
		require.Equal(t, in.Headers, out.Headers, src)
		require.JSONEq(t, sampleEvent, string(out.Payload), src)
		require.False(t, out.PayloadChanged, "%s: the same content is an unchanged payload", src)
		require.False(t, out.Cancel, src)
	}
}

func TestRunStringPayloadIsText(t *testing.T) {
	t.Parallel()
	out, err := run(t, testEngine(Config{}), "function handler(w) { return {payload: `order ${w.payload.data.orderId} \"paid\"`} }", sampleInput())
	require.NoError(t, err)
	require.True(t, out.PayloadChanged)
	require.True(t, out.PayloadIsString)
	require.Equal(t, `order o-42 "paid"`, string(out.Body()))
	require.Equal(t, "text/plain; charset=utf-8", out.ContentType())

	out, err = run(t, testEngine(Config{}), `function handler(w) { return {payload: {text: "hi"}} }`, sampleInput())
	require.NoError(t, err)
	require.Equal(t, "application/json", out.ContentType())
	require.JSONEq(t, `{"text":"hi"}`, string(out.Body()))
}

func TestRunInvalidResults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, contains string
	}{
		{"undefined", `return undefined`, "must return an object, not undefined"},
		{"null", `return null`, "not null"},
		{"string", `return "x"`, "not a string"},
		{"array", `return [w]`, "not an array"},
		{"function", `return function () {}`, "not a function"},
		{"method GET", `return {method: "GET"}`, "method must be POST, PUT or PATCH"},
		{"method lower-case", `return {method: "put"}`, "method must be"},
		{"method number", `return {method: 1}`, "method must be"},
		{"url ftp", `return {url: "ftp://receiver.example.com/x"}`, "must be http or https"},
		{"url relative", `return {url: "/orders/1"}`, "must be http or https"},
		{"url number", `return {url: 42}`, "url must be a string"},
		{"url credentials", `return {url: "https://u:p@receiver.example.com/"}`, "credentials"},
		{"header webhook-signature", `return {headers: {"webhook-signature": "v1,x"}}`, `"webhook-signature" cannot be set`},
		{"header webhook-id", `return {headers: {"Webhook-Id": "x"}}`, `"webhook-id" cannot be set`},
		{"header webhook-timestamp", `return {headers: {"webhook-timestamp": "1"}}`, "cannot be set"},
		{"header hooklane-", `return {headers: {"Hooklane-Attempt": "9"}}`, "cannot be set"},
		{"header ce-", `return {headers: {"ce-type": "x"}}`, "cannot be set"},
		{"header host", `return {headers: {"host": "evil.example.com"}}`, "cannot be set"},
		{"header content-length", `return {headers: {"content-length": "1"}}`, "cannot be set"},
		{"header transfer-encoding", `return {headers: {"transfer-encoding": "chunked"}}`, "cannot be set"},
		{"header connection", `return {headers: {"connection": "close"}}`, "cannot be set"},
		{"header number", `return {headers: {"x-n": 1}}`, "must be a string"},
		{"header name not a token", `return {headers: {"x a": "1"}}`, "not a token"},
		{"header value newline", `return {headers: {"x-a": "1\r\nx-b: 2"}}`, "control character"},
		{"header twice", `return {headers: {"X-A": "1", "x-a": "2"}}`, "set twice"},
		{"headers array", `return {headers: ["x"]}`, "headers must be an object"},
		{"cancel string", `return {cancel: "yes"}`, "cancel must be true or false"},
		{"payload function", `return {payload: function () {}}`, "payload must be a JSON value"},
	}
	e := testEngine(Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := run(t, e, "function handler(w) { "+tt.body+" }", sampleInput())
			requireRunError(t, err, KindInvalidResult, tt.contains)
		})
	}

	in := sampleInput()
	in.URL = ""
	_, err := run(t, e, `function handler(w) { return {url: "https://receiver.example.com/"} }`, in)
	requireRunError(t, err, KindInvalidResult, "destination")
}

// A getter on a headers object the handler made runs once, as the whole
// build's read of it does: the check of the headers does not export the
// object (which reads every property) to tell the input's own from it.
func TestRunHeaderGetterReadOnce(t *testing.T) {
	t.Parallel()
	e := testEngine(Config{})
	out, err := run(t, e, `function handler(w) { var n = 0, h = {};
		Object.defineProperty(h, "x-a", {get: function () { n++; return "read " + n }, enumerable: true});
		w.headers = h; return w }`, sampleInput())
	require.NoError(t, err)
	require.Equal(t, map[string]string{"x-a": "read 1"}, out.Headers)
}

// A target whose url carries user information keeps it through a handler
// that leaves the url alone or changes its path; the credentials never move
// to another origin, nor change.
func TestRunTargetWithUserInfo(t *testing.T) {
	t.Parallel()
	e := testEngine(Config{})
	in := sampleInput()
	in.URL = "https://u:p@receiver.example.com/hooks"
	for body, want := range map[string]string{
		`return w`:                                           in.URL,
		`w.headers["x-a"] = "1"; return w`:                   in.URL,
		`w.url = w.url + "/42"; return w`:                    in.URL + "/42",
		`return {url: "https://receiver.example.com/other"}`: "https://receiver.example.com/other",
	} {
		out, err := run(t, e, "function handler(w) { "+body+" }", in)
		require.NoError(t, err, body)
		require.Equal(t, want, out.URL, body)
	}
	for _, body := range []string{
		`return {url: "https://u:p@evil.example.com/hooks"}`,
		`return {url: "https://u:other@receiver.example.com/hooks"}`,
		`return {url: "http://u:p@receiver.example.com/hooks"}`,
	} {
		_, err := run(t, e, "function handler(w) { "+body+" }", in)
		requireRunError(t, err, KindInvalidResult, "credentials")
	}
}

func TestRunResultTooLarge(t *testing.T) {
	t.Parallel()
	e := testEngine(Config{MaxResultBytes: 4096})
	out, err := run(t, e, `function handler(w) { return {payload: "x".repeat(4000)} }`, sampleInput())
	require.NoError(t, err, "under the limit")
	require.Len(t, out.Body(), 4000)
	out, err = run(t, e, `function handler(w) { var a = []; for (var i = 0; i < 2000; i++) a.push(1); return {payload: a} }`, sampleInput())
	require.NoError(t, err, "the limit counts the JSON's bytes (4,001 here), not an estimate per value")
	require.Len(t, out.Body(), 4001)

	for _, body := range []string{
		`return {payload: "x".repeat(5000)}`,
		`var a = []; for (var i = 0; i < 1000; i++) a.push("abcdefgh"); return {payload: a}`,
		`var s = "x".repeat(1000); return {payload: [s, 1, s, 2, s, 3, s, 4, s]}`, // the same string five times
		`return {payload: "x".repeat(3000), headers: {"x-big": "y".repeat(2000)}}`,
		`return {headers: {"x-big": "y".repeat(5000)}}`,
		`var a = []; for (var i = 0; i < 2000; i++) a.push(null, 1); return {payload: a}`,
		`var o = {}; for (var i = 0; i < 5000; i++) o["k" + i] = undefined; return {payload: o}`, // left out, but counted
	} {
		_, err := run(t, e, "function handler(w) { "+body+" }", sampleInput())
		requireRunError(t, err, KindTooLarge, "more than 4096 bytes")
	}
}

func TestRunThrow(t *testing.T) {
	t.Parallel()
	e := testEngine(Config{})
	_, err := run(t, e, "function handler(w) {\n  var x = 1;\n    throw new TypeError('bad order ' + w.payload.data.orderId);\n}", sampleInput())
	re := requireRunError(t, err, KindThrow, "TypeError: bad order o-42")
	require.Equal(t, 3, re.Line)
	require.Equal(t, 11, re.Column, "where the error was made")

	_, err = run(t, e, "function handler(w) { return w.payload.data.missing.field }", sampleInput())
	re = requireRunError(t, err, KindThrow, "TypeError")
	require.Equal(t, 1, re.Line)
	require.Positive(t, re.Column)

	_, err = run(t, e, `function handler(w) { throw "plain" }`, sampleInput())
	requireRunError(t, err, KindThrow, "plain")

	_, err = run(t, e, `function handler(w) { function f(n) { return f(n + 1) } return f(0) }`, sampleInput())
	requireRunError(t, err, KindThrow, "call stack")
}

// goja's TypeError for an object without a primitive value prints the
// object's Go value (addresses, property names and values): the run's
// error names it as V8 does, and no address is left in it.
func TestRunThrowHidesAddresses(t *testing.T) {
	t.Parallel()
	e := testEngine(Config{})
	for _, body := range []string{
		`return {payload: "" + Object.create(null)}`,
		`var o = {valueOf: null, toString: null, secret: "s3"}; return {payload: o * 2}`,
		`var o = Object.create(null); o.x = 1; return {payload: [o].join()}`,
		`try { "" + Object.create(null) } catch (e) { throw new Error("wrapped: " + e.message) }`,
	} {
		_, err := run(t, e, "function handler(w) { "+body+" }", sampleInput())
		re := requireRunError(t, err, KindThrow, "Cannot convert object to primitive value")
		require.NotContains(t, re.Error(), "0x", body)
		require.NotContains(t, re.Error(), "&{", body)
		require.NotContains(t, re.Error(), "s3", body)
	}
	require.Equal(t, "TypeError: Cannot convert object to primitive value",
		cleanMessage("TypeError: Could not convert &{Object 0xc000123456 <nil> true map[x:1] [x] 0 0 <nil> map[]} (*goja.baseObject) to primitive"))
	require.Equal(t, "at 0x… and 0x12", cleanMessage("at 0x33c32ddbdd10 and 0x12"), "short hex is left alone")
	require.Equal(t, "TypeError: Cannot convert object to primitive value", cleanMessage("TypeError: Could not convert &{Object 0xc0001"),
		"cut before its end")
}

// A thrown value with a 16 MB message becomes an error of at most 1 KiB.
func TestRunThrowHugeMessage(t *testing.T) {
	t.Parallel()
	e := testEngine(Config{})
	for _, body := range []string{
		`var m = "x"; for (var i = 0; i < 24; i++) m += m; throw {message: m}`,
		`var m = "x"; for (var i = 0; i < 24; i++) m += m; throw new Error(m)`,
		`var m = "x"; for (var i = 0; i < 24; i++) m += m; throw m`,
		`var m = "x"; for (var i = 0; i < 24; i++) m += m; throw {name: m, message: m}`,
	} {
		_, err := run(t, e, "function handler(w) { "+body+" }", sampleInput())
		re := requireRunError(t, err, KindThrow, "xxxx")
		require.Less(t, len(re.Error()), 2*maxErrorBytes)
	}
}

func TestRunSandbox(t *testing.T) {
	t.Parallel()
	src := `function handler(w) {
		var seen = {};
		["require", "process", "console", "setTimeout", "setInterval", "eval", "Function", "Proxy", "Reflect",
		 "Promise", "ArrayBuffer", "Uint8Array", "BigInt", "Map", "WeakMap"].forEach(function (n) {
			seen[n] = typeof globalThis[n];
		});
		var ctor;
		try { (function () {}).constructor("return 1"); ctor = "compiled"; } catch (e) { ctor = e.name; }
		return {payload: {seen: seen, ctor: ctor, es: [1, 2, 3].map(x => x * 2).join(""),
			tmpl: ` + "`${1 + 1}`" + `, json: JSON.parse("[1]")[0], math: Math.max(1, 2), date: new Date(0).toISOString(),
			re: /o-(\d+)/.exec(w.payload.data.orderId)[1], str: "abc".toUpperCase()}};
	}`
	out, err := run(t, testEngine(Config{}), src, sampleInput())
	require.NoError(t, err)
	var got struct {
		Seen map[string]string `json:"seen"`
		Ctor string            `json:"ctor"`
		ES   string            `json:"es"`
		Tmpl string            `json:"tmpl"`
		JSON int               `json:"json"`
		Math int               `json:"math"`
		Date string            `json:"date"`
		RE   string            `json:"re"`
		Str  string            `json:"str"`
	}
	require.NoError(t, json.Unmarshal(out.Payload, &got))
	for name, typ := range got.Seen {
		require.Equal(t, "undefined", typ, "%s must not exist", name)
	}
	require.Equal(t, "TypeError", got.Ctor)
	require.Equal(t, "246", got.ES)
	require.Equal(t, "2", got.Tmpl)
	require.Equal(t, "1970-01-01T00:00:00.000Z", got.Date)
	require.Equal(t, "42", got.RE)
	require.Equal(t, "ABC", got.Str)
}

// A run that sets globals or tampers with the built-ins changes nothing that
// the next run on the same runtime sees.
func TestRunIsolation(t *testing.T) {
	t.Parallel()
	e := testEngine(Config{PoolSize: 1}) // one runtime: both runs share it
	tamper := `var counter = 0;
	function handler(w) {
		counter++;
		leaked = 42;
		globalThis.leaked2 = 43;
		try { Object.prototype.polluted = "yes"; } catch (e) {}
		try { Array.prototype.push = function () { return -1 }; } catch (e) {}
		try { JSON.stringify = function () { return "hacked" }; } catch (e) {}
		try { JSON.parse = null; } catch (e) {}
		try { String.prototype.toUpperCase = function () { return "hacked" }; } catch (e) {}
		try { Object.defineProperty(Object.prototype, "payload", {get: function () { return "hacked" }}); } catch (e) {}
		try { Object.setPrototypeOf(Array.prototype, null); } catch (e) {}
		try { Math.max = null; } catch (e) {}
		try { delete Date.prototype.toISOString; } catch (e) {}
		try { [].__proto__.map = null; } catch (e) {}
		return {payload: counter};
	}`
	out, err := run(t, e, tamper, sampleInput())
	require.NoError(t, err)
	require.Equal(t, "1", string(out.Payload))
	out, err = run(t, e, tamper, sampleInput())
	require.NoError(t, err)
	require.Equal(t, "1", string(out.Payload), "top-level variables start anew every run")

	check := `function handler(w) {
		var a = [];
		a.push(1);
		return {payload: {leaked: typeof leaked, leaked2: typeof leaked2, polluted: ({}).polluted === undefined,
			push: a.length, json: JSON.stringify({a: 1}), upper: "a".toUpperCase(), max: Math.max(1, 2),
			iso: typeof new Date(0).toISOString, map: [1].map(x => x + 1)[0]}};
	}`
	out, err = run(t, e, check, sampleInput())
	require.NoError(t, err)
	require.JSONEq(t, `{"leaked":"undefined","leaked2":"undefined","polluted":true,"push":1,"json":"{\"a\":1}",
		"upper":"A","max":2,"iso":"function","map":2}`, string(out.Payload))

	// Strict code sees its tampering refused.
	_, err = run(t, e, `"use strict"; function handler(w) { Object.prototype.x = 1; return w }`, sampleInput())
	requireRunError(t, err, KindThrow, "TypeError")
	_, err = run(t, e, `"use strict"; function handler(w) { leaked3 = 1; return w }`, sampleInput())
	requireRunError(t, err, KindThrow, "")
}

// Ordinary code that overrides inherited properties on its own objects still
// works with the built-ins frozen.
func TestRunOverridesOwnProperties(t *testing.T) {
	t.Parallel()
	src := `function handler(w) {
		var e = new Error("m"); e.name = "OrderError"; e.message = "changed";
		var o = {}; o.toString = function () { return "custom" };
		function P() {} P.prototype.constructor = P;
		var q = {a: 1}; q.hasOwnProperty = 5; q.valueOf = function () { return 7 };
		return {payload: [String(e), "" + o, q.hasOwnProperty, q + 0, new P().constructor === P]};
	}`
	out, err := run(t, testEngine(Config{}), src, sampleInput())
	require.NoError(t, err)
	require.JSONEq(t, `["OrderError: changed", "custom", 5, 7, true]`, string(out.Payload))
}

func TestRunConcurrent(t *testing.T) {
	t.Parallel()
	e := testEngine(Config{PoolSize: 3})
	prog, err := Compile(`var mine; function handler(w) {
		if (mine !== undefined) throw new Error("state from another run");
		mine = w.attempt;
		globalThis.shared = w.attempt;
		var s = 0; for (var i = 0; i < 1000; i++) s += i;
		return {payload: {attempt: mine, s: s}};
	}`)
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			in := sampleInput()
			in.Attempt = i
			out, err := e.Run(t.Context(), prog, in)
			if err != nil {
				errs <- err
				return
			}
			if want := fmt.Sprintf(`{"attempt":%d,"s":499500}`, i); string(out.Payload) != want {
				errs <- fmt.Errorf("run %d: got %s", i, out.Payload)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func TestRunContext(t *testing.T) {
	t.Parallel()
	e := New(Config{Timeout: time.Minute, MaxMemory: 1 << 30})
	prog, err := Compile(`function handler(w) { while (true) {} }`)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	start := time.Now()
	go func() {
		// Cancel once the run is going: the watchdog registers it first.
		for {
			e.wd.mu.Lock()
			n := len(e.wd.active)
			e.wd.mu.Unlock()
			if n > 0 {
				cancel()
				return
			}
			runtimeGosched()
		}
	}()
	_, err = e.Run(ctx, prog, sampleInput())
	requireRunError(t, err, KindTimeout, "")
	require.Less(t, time.Since(start), 10*time.Second, "cancel stops the run, not the one-minute timeout")

	// A ctx already done while waiting for a runtime: ctx's error.
	done, cancel2 := context.WithCancel(t.Context())
	cancel2()
	full := New(Config{PoolSize: 1})
	require.True(t, full.slots.TryAcquire(1))
	_, err = full.Run(done, prog, sampleInput())
	require.ErrorIs(t, err, context.Canceled)
}

func TestRunTimeout(t *testing.T) {
	t.Parallel()
	e := New(Config{Timeout: 50 * time.Millisecond, MaxMemory: 1 << 30})
	for _, body := range []string{
		`while (true) {}`,
		`for (;;) { try { while (true) {} } catch (e) {} }`, // the interrupt cannot be caught
		`var a = []; while (true) { a.push(1); if (a.length > 1000) a = []; }`,
	} {
		start := time.Now()
		_, err := run(t, e, "function handler(w) {\n "+body+" }", sampleInput())
		re := requireRunError(t, err, KindTimeout, "longer than 50ms")
		require.Positive(t, re.Line)
		require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
		require.Less(t, time.Since(start), e.cfg.WallLimit, "interrupted at the limit of its CPU time")
	}
}

func TestRunOutputBodyHelpers(t *testing.T) {
	t.Parallel()
	o := Output{Payload: json.RawMessage(`"a\nb"`), PayloadIsString: true}
	require.Equal(t, "a\nb", string(o.Body()))
	require.True(t, strings.HasPrefix(o.ContentType(), "text/plain"))
	require.Len(t, Kinds(), 6)
}

// The input is built as JSON.parse would: keys in order, "__proto__" and
// "constructor" as ordinary own properties, escapes decoded.
func TestRunInputJSON(t *testing.T) {
	t.Parallel()
	in := sampleInput()
	in.Payload = json.RawMessage(`{"__proto__":{"x":1},"constructor":"c","b":"\u00e9\ud83d\ude00\n","a":[1,2.5,-3e2,true,null,{}]}`)
	out, err := run(t, testEngine(Config{}), `function handler(w) {
		var p = w.payload;
		return {payload: [Object.keys(p), p.x === undefined, p.constructor, p.b, p.a]};
	}`, in)
	require.NoError(t, err)
	require.JSONEq(t, `[["__proto__","constructor","b","a"],true,"c","é😀\n",[1,2.5,-300,true,null,{}]]`, string(out.Payload))

	out, err = run(t, testEngine(Config{}), `function handler(w) { return w }`, in)
	require.NoError(t, err)
	require.False(t, out.PayloadChanged)
}
