package schema_test

import (
	"bytes"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/event/schema"
)

func TestCompile(t *testing.T) {
	t.Parallel()
	const draft07 = `"$schema":"http://json-schema.org/draft-07/schema#",`
	for _, tc := range []struct {
		name    string
		schema  string
		wantPtr string // "" and wantMsg "" when it compiles
		wantMsg string
	}{
		{name: "2020-12 by default", schema: `{"type":"object","prefixItems":[{"type":"string"}],"$defs":{"a":{"type":"string"}}}`},
		{name: "2020-12 named", schema: `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`},
		{name: "draft-07 named", schema: `{` + draft07 + `"definitions":{"a":{"type":"string"}},"items":[{"$ref":"#/definitions/a"}],"additionalItems":false}`},
		{name: "boolean schema", schema: `true`},
		{name: "draft-07 without fragment", schema: `{"$schema":"http://json-schema.org/draft-07/schema","type":"object"}`},
		{name: "refs inside its own $id resolve", schema: `{"$id":"https://example.com/order.json","$defs":{"a":{"type":"string"}},"properties":{"x":{"$ref":"https://example.com/order.json#/$defs/a"},"y":{"$ref":"#/$defs/a"}}}`},
		{name: "array form of items is not 2020-12", schema: `{"items":[{"type":"string"}]}`, wantPtr: "/items", wantMsg: "got array, want"},
		{name: "draft-07 rules apply when named", schema: `{` + draft07 + `"exclusiveMinimum":true}`, wantPtr: "/exclusiveMinimum", wantMsg: "got boolean, want number"},
		{name: "unknown type name", schema: `{"type":"object","properties":{"amount":{"type":"nummber"}}}`, wantPtr: "/properties/amount/type", wantMsg: "value must be one of"},
		{name: "wrong keyword type", schema: `{"type":"object","required":"amount"}`, wantPtr: "/required", wantMsg: "got string, want array"},
		{name: "bad regex", schema: `{"type":"string","pattern":"("}`, wantPtr: "/pattern", wantMsg: "is not valid regex"},
		{name: "not a schema", schema: `[1]`, wantPtr: "", wantMsg: "got array, want boolean or object"},
		{name: "not JSON", schema: `{"type":`, wantPtr: "", wantMsg: "is not valid JSON"},
		{name: "dangling local ref", schema: `{"$ref":"#/$defs/missing"}`, wantPtr: "", wantMsg: "not found"},
		{name: "local file is not read", schema: `{"$ref":"file:///etc/hostname"}`, wantPtr: "", wantMsg: "self-contained"},
		{name: "network is not used", schema: `{"$ref":"http://127.0.0.1:9/s.json"}`, wantPtr: "", wantMsg: "self-contained"},
		{name: "unknown metaschema", schema: `{"$schema":"http://example.com/meta","type":"object"}`, wantPtr: "", wantMsg: "self-contained"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sch, err := schema.Compile("shop.order", "1.0", []byte(tc.schema))
			if tc.wantMsg == "" {
				require.NoError(t, err)
				require.NotNil(t, sch)
				return
			}
			var ce *schema.CompileError
			require.ErrorAs(t, err, &ce, "%T %v", err, err)
			require.Equal(t, tc.wantPtr, ce.Pointer)
			require.Contains(t, ce.Message, tc.wantMsg)
		})
	}
}

func TestCompileAssertsFormats(t *testing.T) {
	t.Parallel()
	for _, draft := range []string{"", `"$schema":"http://json-schema.org/draft-07/schema#",`, `"$schema":"https://json-schema.org/draft/2020-12/schema",`} {
		sch, err := schema.Compile("a.b", "1.0", []byte(`{`+draft+`"type":"string","format":"email"}`))
		require.NoError(t, err)
		for doc, ok := range map[string]bool{`"a@example.com"`: true, `"not-an-email"`: false} {
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(doc)))
			require.NoError(t, err)
			require.Equal(t, ok, sch.Validate(inst) == nil, "draft %q, %s", draft, doc)
		}
	}
}
