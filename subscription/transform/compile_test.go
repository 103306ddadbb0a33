package transform

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		src       string
		line, col int
		msg       string
	}{
		{"syntax error on line 3", "function handler(w) {\n  var x = 1;\n  return w +;\n}", 3, 13, "Unexpected token"},
		{"syntax error on line 1", "function handler(w) { return ) }", 1, 30, "Unexpected token"},
		{"no handler", "function other(w) { return w }", 0, 0, "no top-level function handler"},
		{"handler not at top level", "function f() { function handler(w) { return w } }", 0, 0, "no top-level function handler"},
		{"handler not a function", "var handler = 1;", 0, 0, "no top-level function handler"},
		{"too large", "function handler(w) { return w }\n//" + strings.Repeat("é", MaxSourceBytes/2), 0, 0, "more than the 65536 allowed"},
		{"bigint", "function handler(w) {\n  return {payload: String(2n ** 64n)} }", 2, 27, "BigInt"},
		{"deep nesting", "function handler(w) { return " + strings.Repeat("(", 600) + "1" + strings.Repeat(")", 600) + " }", 1, 529, "nest"},
		{"runaway errors", strings.Repeat("}", MaxSourceBytes), 1, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			_, err := Compile(tt.src)
			require.Less(t, time.Since(start), 2*time.Second, "compiling must not take long")
			var ce *CompileError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tt.line, ce.Line, ce.Error())
			require.Equal(t, tt.col, ce.Column, ce.Error())
			require.Contains(t, ce.Message, tt.msg)
			require.LessOrEqual(t, len(ce.Message), maxErrorBytes)
		})
	}
}

func TestCompileAccepts(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		"function handler(webhook) { return webhook }",
		"const handler = (w) => { w.payload = `${w.eventType}!`; return w }",
		"let handler = function (w) { let {payload} = w; return {payload: payload} }",
		"var handler = function named(w) { return w }",
		"'use strict';\nfunction handler(w) { return w }",
		"function handler(w) { return w }\n" + strings.Repeat(" ", MaxSourceBytes-len("function handler(w) { return w }\n")),
	} {
		_, err := Compile(src)
		require.NoError(t, err, src)
	}
}

func TestCache(t *testing.T) {
	t.Parallel()
	c := NewCache(2)
	src := "function handler(w) { return w }"
	k1 := CacheKey{SubscriptionID: "s1", Version: "1"}
	p1, err := c.Program(k1, src)
	require.NoError(t, err)
	again, err := c.Program(k1, src)
	require.NoError(t, err)
	require.Same(t, p1, again, "a hit returns the compiled program, not a new one")

	other, err := c.Program(k1, src+" ")
	require.NoError(t, err)
	require.NotSame(t, p1, other, "other code under the same key compiles anew")

	_, err = c.Program(CacheKey{SubscriptionID: "s2", Version: "1"}, src)
	require.NoError(t, err)
	_, err = c.Program(CacheKey{SubscriptionID: "s3", Version: SourceVersion(src)}, src)
	require.NoError(t, err)
	require.Equal(t, 2, c.Len(), "bounded")

	_, err = c.Program(CacheKey{SubscriptionID: "bad"}, "function nope(){}")
	var ce *CompileError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, 2, c.Len(), "errors are not kept")
}

func TestSameOrigin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		prev, next string
		want       bool
	}{
		{"https://api.example.com/hooks", "https://api.example.com/orders/42?x=1", true},
		{"https://api.example.com/hooks", "https://API.example.com:443/a", true},
		{"https://api.example.com/hooks", "http://api.example.com/hooks", false},
		{"https://api.example.com/hooks", "https://evil.example.com/hooks", false},
		{"https://api.example.com/hooks", "https://api.example.com:8443/hooks", false},
		{"https://api.example.com/hooks", "https://user:pw@api.example.com/hooks", false},
		{"https://api.example.com/hooks", "://bad", false},
		{"https://u:p@api.example.com/hooks", "https://u:p@api.example.com/orders/42", true},
		{"https://u:p@api.example.com/hooks", "https://api.example.com/hooks", true},
		{"https://u:p@api.example.com/hooks", "https://u:other@api.example.com/hooks", false},
		{"https://u:p@api.example.com/hooks", "https://u:p@evil.example.com/hooks", false},
		{"https://u:p@api.example.com/hooks", "https://u:p@api.example.com:8443/hooks", false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, SameOrigin(tt.prev, tt.next), "%s → %s", tt.prev, tt.next)
	}
}
