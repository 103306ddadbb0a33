package schema_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/event/schema"
)

// numericSchemas use every keyword that makes the validator compute with
// big.Rat: issue 21 class 2 found that huge exponents make them panic or
// take tens of milliseconds.
var numericSchemas = []string{ //nolint:gochecknoglobals // read-only test fixture
	`{"minimum":0}`,
	`{"maximum":10}`,
	`{"exclusiveMinimum":0}`,
	`{"exclusiveMaximum":10}`,
	`{"multipleOf":0.5}`,
	`{"type":"integer"}`,
	`{"enum":[1,2]}`,
	`{"const":1}`,
	`{"uniqueItems":true}`,
	`{"type":"object","properties":{"amount":{"type":"number","minimum":0,"multipleOf":0.01}}}`,
}

// hostileNumbers are past MaxNumberDigits or MaxNumberExponent.
var hostileNumbers = []string{ //nolint:gochecknoglobals // read-only test fixture
	"1e1000001",  // big.Rat gives up: nil, then a nil dereference
	"-1e1000001", //
	"1e999999",   // big.Rat computes 10^999999: tens of ms per keyword
	"1e-999999",  //
	"1.5E+401",   //
	"1" + strings.Repeat("0", 100),
	"0." + strings.Repeat("0", 99) + "1",
}

func compile(t *testing.T, s string) *jsonschema.Schema {
	t.Helper()
	sch, err := schema.Compile("a.b", "1.0", []byte(s))
	require.NoError(t, err, s)
	return sch
}

func decode(t *testing.T, doc string) any {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(doc)))
	require.NoError(t, err, doc)
	return inst
}

// TestValidateInstanceRefusesHugeNumbers: a number past the bounds is a
// rejection at its pointer before the validator sees it — never a panic,
// never tens of milliseconds (BenchmarkValidateHugeNumber measures it).
func TestValidateInstanceRefusesHugeNumbers(t *testing.T) {
	t.Parallel()
	for _, s := range numericSchemas {
		sch := compile(t, s)
		for _, n := range hostileNumbers {
			for _, doc := range []struct{ json, ptr string }{
				{n, "/data"},
				{`{"amount":` + n + `}`, "/data/amount"},
				{`[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,` + n + `]`, "/data/20"},
			} {
				var err error
				require.NotPanics(t, func() { err = schema.ValidateInstance(sch, decode(t, doc.json)) }, "%s %s", s, doc.json)
				var rej *schema.Rejection
				require.ErrorAs(t, err, &rej, "%s %s: %T %v", s, doc.json, err, err)
				require.Equal(t, doc.ptr, rej.Violations[0].Pointer, "%s %s", s, doc.json)
				require.Contains(t, rej.Violations[0].Message, "number ")
			}
		}
	}
}

// TestValidateInstanceKeepsRealNumbers: numbers inside the bounds are
// validated as before, the boundary cases included.
func TestValidateInstanceKeepsRealNumbers(t *testing.T) {
	t.Parallel()
	sch := compile(t, `{"type":"number","minimum":0}`)
	for _, n := range []string{"0", "1e308", "1.7976931348623157e308", "5e-324", "1e400", "1E-400", strings.Repeat("9", 100), "0." + strings.Repeat("1", 99)} {
		require.NoError(t, schema.ValidateInstance(sch, decode(t, n)), n)
	}
	err := schema.ValidateInstance(sch, decode(t, "-1e400"))
	var rej *schema.Rejection
	require.ErrorAs(t, err, &rej)
	require.Equal(t, "/data", rej.Violations[0].Pointer)
	require.Contains(t, rej.Violations[0].Message, "minimum")
}

// TestValidateInstanceBoundsViolations: a value with thousands of problems
// lists a bounded number of them.
func TestValidateInstanceBoundsViolations(t *testing.T) {
	t.Parallel()
	sch := compile(t, `{"type":"array","items":{"type":"string"}}`)
	items := make([]string, 5000)
	for i := range items {
		items[i] = strconv.Itoa(i)
	}
	err := schema.ValidateInstance(sch, decode(t, "["+strings.Join(items, ",")+"]"))
	var rej *schema.Rejection
	require.ErrorAs(t, err, &rej)
	require.Len(t, rej.Violations, 101)
	require.Equal(t, schema.Violation{Pointer: "/data", Message: "and 4900 more violations, not listed"}, rej.Violations[100])

	bad := make([]string, 50)
	for i := range bad {
		bad[i] = "1e999999"
	}
	err = schema.ValidateInstance(sch, decode(t, "["+strings.Join(bad, ",")+"]"))
	require.ErrorAs(t, err, &rej)
	require.Len(t, rej.Violations, 10)
}

// TestCompileRefusesHugeNumbers: a schema's own numbers have the same
// bounds (a multipleOf of 1e-999999 cost 0.4 s per event; a minimum of
// 1e1000001 was silently ignored); the pointer goes inside the schema.
func TestCompileRefusesHugeNumbers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ schema, ptr string }{
		{`{"minimum":1e1000001}`, "/minimum"},
		{`{"multipleOf":1e-999999}`, "/multipleOf"},
		{`{"properties":{"a":{"maximum":1e401}}}`, "/properties/a/maximum"},
		{`{"enum":[1,` + strings.Repeat("7", 101) + `]}`, "/enum/1"},
		{`{"const":{"x":-2E+999}}`, "/const/x"},
	} {
		_, err := schema.Compile("a.b", "1.0", []byte(tc.schema))
		var ce *schema.CompileError
		require.ErrorAs(t, err, &ce, "%s: %v", tc.schema, err)
		require.Equal(t, tc.ptr, ce.Pointer, tc.schema)
		require.Contains(t, ce.Message, "number ")
	}
	compile(t, `{"maximum":1e308,"minimum":-1e400,"multipleOf":1e-400}`)
}

// TestCompileRefusesRefCycles: issue 21 class 8 — a schema whose keywords
// apply it to the same value without end was accepted and then rejected
// every event; it does not compile. Recursion that descends into the value
// (a tree) compiles.
func TestCompileRefusesRefCycles(t *testing.T) {
	t.Parallel()
	const draft07 = `"$schema":"http://json-schema.org/draft-07/schema#",`
	for _, tc := range []struct {
		name, schema string
		ptr          string // "" when it compiles
	}{
		{"self $ref", `{"$ref":"#"}`, "/$ref"},
		{"mutual definitions", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, "/$defs/b/$ref"},
		{"through allOf", `{"type":"object","allOf":[{"$ref":"#"}]}`, "/allOf/0/$ref"},
		{"through anyOf with a base case first", `{"anyOf":[{"type":"string"},{"$ref":"#"}]}`, "/anyOf/1/$ref"},
		{"through not", `{"not":{"$ref":"#"}}`, "/not/$ref"},
		{"through if", `{"if":{"$ref":"#"},"then":true}`, "/if/$ref"},
		{"through dependentSchemas", `{"dependentSchemas":{"a":{"$ref":"#"}}}`, "/dependentSchemas/a/$ref"},
		{"inside a property", `{"properties":{"p":{"$defs":{"x":{"allOf":[{"$ref":"#/properties/p"}]}},"$ref":"#/properties/p/$defs/x"}}}`, "/properties/p/$defs/x/allOf/0/$ref"},
		{"draft-07 definitions", `{` + draft07 + `"definitions":{"a":{"$ref":"#/definitions/b"},"b":{"oneOf":[{"$ref":"#/definitions/a"}]}},"properties":{"x":{"$ref":"#/definitions/a"}}}`, "/definitions/b/oneOf/0/$ref"},
		{"draft-07 dependencies", `{` + draft07 + `"dependencies":{"a":{"$ref":"#"}}}`, "/dependencies/a/$ref"},
		{"through $dynamicRef", `{"$dynamicAnchor":"n","anyOf":[{"$dynamicRef":"#n"}]}`, "/anyOf/0/$dynamicRef"},
		{"through 2019-09 $recursiveRef", `{"$schema":"https://json-schema.org/draft/2019-09/schema","$recursiveAnchor":true,"allOf":[{"$recursiveRef":"#"}]}`, "/allOf/0/$recursiveRef"},
		{"tree with optional children", `{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#"}}}}`, ""},
		{"linked list through a definition", `{"$defs":{"node":{"type":"object","properties":{"next":{"$ref":"#/$defs/node"}}}},"$ref":"#/$defs/node"}`, ""},
		{"recursion through additionalProperties", `{"type":"object","additionalProperties":{"anyOf":[{"type":"string"},{"$ref":"#"}]}}`, ""},
		{"shared definition used twice", `{"$defs":{"m":{"type":"number"}},"properties":{"a":{"$ref":"#/$defs/m"},"b":{"allOf":[{"$ref":"#/$defs/m"}]}}}`, ""},
		{"dynamic ref tree", `{"$dynamicAnchor":"node","type":"object","properties":{"kids":{"type":"array","items":{"$dynamicRef":"#node"}}}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := schema.Compile("a.b", "1.0", []byte(tc.schema))
			if tc.ptr == "" {
				require.NoError(t, err)
				return
			}
			var ce *schema.CompileError
			require.ErrorAs(t, err, &ce, "%T %v", err, err)
			require.Equal(t, tc.ptr, ce.Pointer, "%v", ce)
			require.Contains(t, ce.Message, "refers to itself without end")
		})
	}
	// The tree validates trees of any depth.
	sch := compile(t, `{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#"}}}}`)
	require.NoError(t, schema.ValidateInstance(sch, decode(t, `{"children":[{"children":[{}]},{}]}`)))
}

// TestRegistryRefusesStoredSchemaThatNoLongerCompiles: a version stored
// before these rules (a $ref cycle, a huge number) answers 422 for its
// events, not a 503 the producer would retry forever.
func TestRegistryRefusesStoredSchemaThatNoLongerCompiles(t *testing.T) {
	t.Parallel()
	st := &memStore{types: map[string]*schema.EventType{
		"shop.cyclic": {Code: "shop.cyclic", Status: schema.TypeCurrent, Versions: []schema.Version{
			{Version: "1.0", Status: schema.VersionCurrent, Schema: json.RawMessage(`{"$ref":"#"}`)},
		}},
		"shop.tiny": {Code: "shop.tiny", Status: schema.TypeCurrent, Versions: []schema.Version{
			{Version: "1.0", Status: schema.VersionCurrent, Schema: json.RawMessage(`{"multipleOf":1e-999999}`)},
		}},
	}}
	r := schema.NewRegistry(schema.RegistryConfig{Store: st})
	for _, code := range []string{"shop.cyclic", "shop.tiny"} {
		for range 2 { // the second time from the cache
			_, err := r.Validate(t.Context(), event(code, "", `1`))
			var rej *schema.Rejection
			require.ErrorAs(t, err, &rej, "%s: %T %v", code, err, err)
			require.Equal(t, "/data", rej.Violations[0].Pointer)
			require.Contains(t, rej.Violations[0].Message, "does not compile")
			var ce *schema.CompileError
			require.ErrorAs(t, rej.Err, &ce, "%v", rej.Err)
		}
	}
}

// TestRegistryValidateHugeNumbers: the ingest path (Registry.Validate) on
// the order schema's minimum: a rejection at the number's pointer.
func TestRegistryValidateHugeNumbers(t *testing.T) {
	t.Parallel()
	st := &memStore{types: map[string]*schema.EventType{"shop.order.created": orderType()}}
	r := schema.NewRegistry(schema.RegistryConfig{Store: st})
	for _, n := range hostileNumbers {
		var err error
		require.NotPanics(t, func() {
			_, err = r.Validate(t.Context(), event("shop.order.created", "", `{"amount":`+n+`,"currency":"EUR"}`))
		}, n)
		var rej *schema.Rejection
		require.ErrorAs(t, err, &rej, "%s: %T %v", n, err, err)
		require.Equal(t, []schema.Violation{{Pointer: "/data/amount", Message: rej.Violations[0].Message}}, rej.Violations, n)
	}
	_, err := r.Validate(t.Context(), &cloudevent.Event{
		SpecVersion: "1.0", ID: "1", Source: "/s", Type: "shop.order.created",
		Data: json.RawMessage(`{"amount":1e300,"currency":"EUR"}`),
	})
	require.NoError(t, err)
}
