package schema_test

import (
	"bytes"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/event/schema"
)

// FuzzCompileValidate fuzzes a schema and a value: Compile never panics
// and refuses with a *CompileError; a compiled schema validates any value
// with ValidateInstance without a panic, answering nil or a *Rejection
// whose violations point below /data. The seeds hold the numbers that broke
// the validator's numeric keywords and the $ref loops (issue 21).
func FuzzCompileValidate(f *testing.F) {
	for _, s := range numericSchemas {
		for _, n := range []string{"1", "-0.5", "1e1000001", "1e-999999", "1e400"} {
			f.Add([]byte(s), []byte(n))
		}
	}
	for _, s := range []struct{ schema, data string }{
		{orderSchema, `{"amount":1e1000001,"currency":"EUR"}`},
		{orderSchema, `{"amount":10,"currency":"EUR","lines":[{"sku":"A","a/b~c":1e999999}]}`},
		{`{"uniqueItems":true}`, `[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,1e1000001]`},
		{`{"multipleOf":1e-999999}`, `1`},
		{`{"minimum":1e1000001}`, `1`},
		{`{"$ref":"#"}`, `{}`},
		{`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, `1`},
		{`{"anyOf":[{"type":"string"},{"$ref":"#"}]}`, `"s"`},
		{`{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#"}}}}`, `{"children":[{"children":[]}]}`},
		{`{"$dynamicAnchor":"n","anyOf":[{"$dynamicRef":"#n"}]}`, `{}`},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","dependencies":{"a":{"$ref":"#"}}}`, `{"a":1}`},
	} {
		f.Add([]byte(s.schema), []byte(s.data))
	}
	f.Fuzz(func(t *testing.T, raw, data []byte) {
		var sch *jsonschema.Schema
		var err error
		require.NotPanics(t, func() { sch, err = schema.Compile("fuzz.type", "1.0", raw) })
		if err != nil {
			var ce *schema.CompileError
			require.ErrorAs(t, err, &ce, "%T %v", err, err)
			return
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			return // ingest refuses malformed data before validation
		}
		require.NotPanics(t, func() { err = schema.ValidateInstance(sch, inst) })
		if err == nil {
			return
		}
		var rej *schema.Rejection
		require.ErrorAs(t, err, &rej, "%T %v", err, err)
		require.NotEmpty(t, rej.Violations)
		for _, v := range rej.Violations {
			require.True(t, v.Pointer == "/data" || len(v.Pointer) > len("/data/") && v.Pointer[:6] == "/data/", "%q", v.Pointer)
		}
	})
}
