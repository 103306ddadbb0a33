package transform

import (
	"strings"
	"testing"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/require"
)

// The scan's tape of a payload with whitespace everywhere, an escaped key,
// a repeated key and an array of objects: each segment is contiguous, a
// child's written before its parent's, the root's last; keys are recorded
// with their quotes and whether they have escapes, values where their text
// starts (past the whitespace) with their segment or -1.
func TestTapeRecordsSegments(t *testing.T) {
	t.Parallel()
	sb, err := newSandbox(1<<20, 1<<20)
	require.NoError(t, err)
	text := " {\n \"a\" :\t[ {\"b\": 1 } , 2\r] , \"a\\u0062\" : \"x\" ,\"a\":null } "
	at := func(s string, n int) int32 { // offset of the n-th (from 0) s in text
		t.Helper()
		i := -1
		for range n + 1 {
			j := strings.Index(text[i+1:], s)
			require.GreaterOrEqual(t, j, 0, s)
			i += 1 + j
		}
		return int32(i)
	}
	var b tapeBuf
	li, v, err := b.lazyInput(sb.rt, []byte(text))
	require.NoError(t, err)
	require.False(t, li.canonical)
	want := []int32{
		// 0: {"b": 1 }
		1, at(`"b"`, 0), at(`"b"`, 0) + 3, 0, at(`1`, 0), -1,
		// 6: [ {…} , 2]
		2, at(`{"b"`, 0), 0, at(`2`, 0), -1,
		// 11: the root: "a" (its first place, its last value), "a\u0062", "a"
		3,
		at(`"a"`, 0), at(`"a"`, 0) + 3, 0, at(`[`, 0), 6,
		at(`"a\`, 0), at(`"a\`, 0) + 9, 1, at(`"x"`, 0), -1,
		at(`"a"`, 1), at(`"a"`, 1) + 3, 0, at(`null`, 0), -1,
	}
	require.Equal(t, want, li.tape)
	require.Empty(t, b.scratch, "the scratch stack is empty after the scan")

	read := func(src string) string {
		t.Helper()
		f, err := sb.rt.RunString("(function (p) { return " + src + " })")
		require.NoError(t, err)
		call, ok := goja.AssertFunction(f)
		require.True(t, ok)
		got, err := call(goja.Undefined(), v)
		require.NoError(t, err, src)
		return got.String()
	}
	require.Equal(t, `a,ab`, read(`Object.keys(p).join()`), "a repeated key keeps its first place")
	require.Equal(t, `null x true`, read(`String(p.a) + " " + p.ab + " " + (p.a === null)`), "and its last value")
	require.Equal(t, "true", read(`JSON.stringify(p) === '{"a":null,"ab":"x"}'`), "stringified in that order")

	// The buffers are kept for the next run: no new tape for a text as
	// large.
	prev := &b.tape[:1][0]
	_, _, err = b.lazyInput(sb.rt, []byte(text))
	require.NoError(t, err)
	require.Same(t, prev, &b.tape[:1][0], "the tape's buffer is reused")
}

// The first read of an array of objects builds the element from its
// segment: a lazy object whose own nested arrays are lazy too.
func TestTapeNestedArraysOfObjects(t *testing.T) {
	t.Parallel()
	sb, err := newSandbox(1<<20, 1<<20)
	require.NoError(t, err)
	text := `[[{"k":[{"x":1},{"x":[2,[3]]}]},[]],{"__proto__":[4],"10":5,"2":6,"z":7}]`
	li, v, err := newLazyInput(sb.rt, []byte(text))
	require.NoError(t, err)
	f, err := sb.rt.RunString(`(function (p) {
		return [p[0][0].k[1].x[1][0], p[0][1].length, Object.keys(p[1]).join(), p[1].__proto__[0],
			Object.getPrototypeOf(p[1]) === Object.prototype, JSON.stringify(p)].join(" ")
	})`)
	require.NoError(t, err)
	call, ok := goja.AssertFunction(f)
	require.True(t, ok)
	got, err := call(goja.Undefined(), v)
	require.NoError(t, err)
	require.Equal(t, `3 0 2,10,__proto__,z 4 true [[{"k":[{"x":1},{"x":[2,[3]]}]},[]],{"2":6,"10":5,"__proto__":[4],"z":7}]`, got.String())
	require.True(t, li.untouched(v))
}

// A payload nested to the bound is read lazily to its innermost value; one
// level more is refused by the lazy scan with the whole build's error, the
// byte it names the same with whitespace before the value too deep.
func TestTapeNestingBound(t *testing.T) {
	t.Parallel()
	sb, err := newSandbox(1<<20, 1<<20)
	require.NoError(t, err)
	nested := func(n int, inner string) string {
		return strings.Repeat(`{"a": [`, n) + inner + strings.Repeat(`]}`, n)
	}
	// n levels of {"a": [ put the inner value at depth 2n.
	ok := nested(maxJSONNesting/2, ` 1`)
	li, v, err := newLazyInput(sb.rt, []byte(ok))
	require.NoError(t, err)
	require.Len(t, li.tape, maxJSONNesting*(1+tapeElement+1+tapeMember)/2)
	obj := v
	for range maxJSONNesting / 2 {
		obj = obj.ToObject(sb.rt).Get("a").ToObject(sb.rt).Get("0")
	}
	require.Equal(t, int64(1), obj.ToInteger())

	for _, text := range []string{
		nested(maxJSONNesting/2, `[ 1]`), nested(maxJSONNesting/2, `[1]`), nested(maxJSONNesting/2, "{\"b\":\n1}"),
		nested(maxJSONNesting/2+1, ` 1`), nested(maxJSONNesting/2+1, `1`), nested(maxJSONNesting, `[`),
	} {
		_, _, wantErr := jsonToValue(sb.rt, []byte(text))
		require.Error(t, wantErr)
		_, _, err := newLazyInput(sb.rt, []byte(text))
		require.Error(t, err)
		require.Equal(t, wantErr.Error(), err.Error())
	}
}

// A payload nested 100 levels, objects in arrays in objects, is the same
// lazily as whole for handlers that read, write and stringify its depths.
func TestRunLazyDeepPayloadSameAsWhole(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"k":"v","a":[0,`, 50) + `{"end":true}` + strings.Repeat(`],"z":1}`, 50)
	spaced := strings.ReplaceAll(strings.ReplaceAll(deep, ",", " ,\n"), ":", " : ")
	walk := `var p = w.payload; for (var i = 0; i < 50; i++) p = p.a[1];`
	sameAsWhole(t, []string{
		`return w`,
		walk + ` w.payload = p; return w`,
		walk + ` p.end = false; p.more = [1, {x: 2}]; return w`,
		`var p = w.payload; for (var i = 0; i < 25; i++) p = p.a[1]; p.a.push(3); delete p.k; w.headers["x-s"] = JSON.stringify(p).slice(0, 200); return w`,
		walk + ` w.headers["x-k"] = Object.keys(w.payload.a[1]).join(); return w`,
	}, []string{deep, spaced}, nil)
}

// For any text, the lazy scan accepts what the whole build accepts (the same
// JSON.stringify and canonical flag) and refuses what it refuses (the same
// error).
func FuzzLazyTape(f *testing.F) {
	for _, seed := range []string{
		benchEvent, sampleEvent, `{"a":1,"a":2}`, `{"a\u0062":[{"b":[]}],"10":{"2":null}}`, ` [ 1 , "x" , [ { } ] ] `,
		`{"__proto__":{"x":1}}`, `[[[[[[]]]]]]`, `{"a":`, `{"a":1}x`, `"\ud800"`, `-0`, `1e400`, `{"a" 1}`, `[1,]`, `{"\z":1}`,
		strings.Repeat(`[`, 1001) + strings.Repeat(`]`, 1001),
	} {
		f.Add([]byte(seed))
	}
	sb, err := newSandbox(1<<20, 1<<20)
	require.NoError(f, err)
	var b tapeBuf
	f.Fuzz(func(t *testing.T, text []byte) {
		want, canonical, wantErr := jsonToValue(sb.rt, text)
		li, got, err := b.lazyInput(sb.rt, text)
		if wantErr != nil {
			require.Error(t, err)
			require.Equal(t, wantErr.Error(), err.Error())
			return
		}
		require.NoError(t, err)
		wantJS, err := sb.origStringify(goja.Undefined(), want)
		require.NoError(t, err)
		gotJS, err := sb.origStringify(goja.Undefined(), got)
		require.NoError(t, err)
		require.Equal(t, wantJS.String(), gotJS.String())
		require.Equal(t, canonical, li.canonical)
	})
}

// A tape larger than keptTapeEntries serves its run but is not kept for the
// next one; a small one is.
func TestTapeLargeBuffersAreNotKept(t *testing.T) {
	t.Parallel()
	sb, err := newSandbox(1<<20, 1<<20)
	require.NoError(t, err)
	var b tapeBuf
	li, v, err := b.lazyInput(sb.rt, []byte(longArrayPayload(20_000)))
	require.NoError(t, err)
	require.Greater(t, len(li.tape), keptTapeEntries)
	require.Nil(t, b.tape, "the large tape is not kept")
	require.Equal(t, int64(19_999), v.ToObject(sb.rt).Get("big").ToObject(sb.rt).Get("19999").ToObject(sb.rt).Get("i").ToInteger())
	_, _, err = b.lazyInput(sb.rt, []byte(benchEvent))
	require.NoError(t, err)
	require.NotNil(t, b.tape, "a small one is")
}
