package cloudevent

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// replacements counts the U+FFFD that a valid-UTF-8 JSON string holds
// literally or as a \ufffd escape: any more in its decoded form were made by
// encoding/json from a lone surrogate.
func replacements(raw []byte) int {
	n := bytes.Count(raw, []byte("\uFFFD"))
	lower := strings.ToLower(string(raw))
	// Count \ufffd escapes that are not themselves an escaped backslash
	// followed by "ufffd".
	for i := 0; i < len(lower); i++ {
		if lower[i] != '\\' {
			continue
		}
		if strings.HasPrefix(lower[i+1:], "ufffd") {
			n++
		}
		i++
	}
	return n
}

func FuzzLoneSurrogate(f *testing.F) {
	for _, s := range []string{`"a"`, `"\ud800"`, `"\udc00"`, `"\ud83d\ude00"`, `"\\ud800"`, `"\\\ud800"`, `"\ufffd"`, `"\uFFFD\ud800x"`, `"\ud800\u0041"`, `"\ud800\\udc00"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) || !utf8.Valid(raw) || len(raw) == 0 || raw[0] != '"' {
			return
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return
		}
		replaced := strings.Count(s, "\uFFFD") > replacements(raw)
		if got := hasLoneSurrogate(raw); got != replaced {
			t.Fatalf("hasLoneSurrogate(%s) = %v; encoding/json replaced a surrogate: %v (decoded %q)", raw, got, replaced, s)
		}
	})
}
