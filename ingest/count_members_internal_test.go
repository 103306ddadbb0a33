package ingest

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// membersByDecoder counts the members of a JSON object with
// encoding/json's tokenizer: the reference countMembers must agree with.
func membersByDecoder(obj []byte) (int, bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return 0, false
	}
	n := 0
	for dec.More() {
		if _, err := dec.Token(); err != nil { // the name
			return 0, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return 0, false
		}
		n++
	}
	return n, true
}

// FuzzCountMembers: countMembers, which refuses events of too many
// attributes before they are decoded, counts what encoding/json decodes.
func FuzzCountMembers(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":1}`, `{ "a" : "x" , "b":[1,{"c":2}] }`, `{"a":"\"","b":"\\","c":"\\\"{"}`,
		`{"a":{"b":{"c":{}}},"d":[],"e":"}"}`, `{"a":1,"a":2,"a":3}`,
		`{"specversion":"1.0","id":"1","source":"/s","type":"a.b","data":{"x":"` + strings.Repeat(`\",`, 20) + `"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		obj = bytes.TrimSpace(obj)
		if !json.Valid(obj) || len(obj) == 0 || obj[0] != '{' {
			return
		}
		want, ok := membersByDecoder(obj)
		if !ok {
			return
		}
		// Pad the object with whitespace so that its length never lets
		// countMembers skip the scan, and count up to the exact number.
		padded := append(append([]byte{}, obj[:len(obj)-1]...), bytes.Repeat([]byte(" "), 5*want+8)...)
		padded = append(padded, '}')
		if got := countMembers(padded, want+1); got != want {
			t.Fatalf("countMembers(%s) = %d, want %d", obj, got, want)
		}
	})
}
