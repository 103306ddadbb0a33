package subscription

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/event/cloudevent"
)

// filterEvent has every kind of field the filters reach.
func filterEvent() *cloudevent.Event {
	return &cloudevent.Event{
		SpecVersion: "1.0", ID: "e1", Source: "/shop", Type: "ecommerce:orders:order:created",
		Subject: "order:12345",
		Time:    time.Date(2026, 1, 24, 14, 0, 0, 0, time.UTC),
		Extensions: map[string]any{
			"region":   "us-west",
			"priority": json.Number("5"),
			"vip":      true,
			"score":    2.5, // set in code rather than decoded
		},
		Data: json.RawMessage(`{"amount": 100, "big": 12345678901234567890, "neg": -3.5,
			"currency": "EUR", "tags": ["a", "b"], "customer": {"id": "c1", "tier": {"level": 2}},
			"nothing": null, "flag": false, "items": [{"sku": "x1"}, {"sku": "x2"}], "dotted.key": 1}`),
	}
}

func TestFilterEval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		f    Filter
		want bool
	}{
		// eq / neq on attributes and extensions.
		{"eq extension", filter("region", "eq", `"us-west"`), true},
		{"eq extension other", filter("region", "eq", `"eu"`), false},
		{"neq extension", filter("region", "neq", `"eu"`), true},
		{"eq attribute subject", filter("subject", "eq", `"order:12345"`), true},
		{"eq attribute type", filter("type", "eq", `"ecommerce:orders:order:created"`), true},
		{"eq time", filter("time", "eq", `"2026-01-24T14:00:00.000Z"`), true},
		{"eq number extension", filter("priority", "eq", `5.0`), true},
		{"eq bool extension", filter("vip", "eq", `true`), true},
		{"eq float extension", filter("score", "eq", `2.50`), true},
		{"eq mixed string number", filter("priority", "eq", `"5"`), false},
		{"neq mixed string number", filter("priority", "neq", `"5"`), true},
		// data paths.
		{"eq data number", filter("data.amount", "eq", `100`), true},
		{"eq data 1 vs 1.0", filter("data.amount", "eq", `100.0`), true},
		{"eq data 1e2", filter("data.amount", "eq", `1e2`), true},
		{"eq big int exact", filter("data.big", "eq", `12345678901234567890`), true},
		{"eq big int off by one", filter("data.big", "eq", `12345678901234567891`), false},
		{"eq nested", filter("data.customer.tier.level", "eq", `2`), true},
		{"eq array index", filter("data.items.1.sku", "eq", `"x2"`), true},
		{"array index out of range", filter("data.items.2.sku", "exists", `true`), false},
		{"array index not a number", filter("data.items.first", "exists", `true`), false},
		{"array index signed", filter("data.items.+1", "exists", `true`), false},
		{"path through scalar", filter("data.amount.x", "exists", `true`), false},
		{"eq object", filter("data.customer", "eq", `{"tier": {"level": 2.0}, "id": "c1"}`), true},
		{"eq object differs", filter("data.customer", "eq", `{"id": "c1"}`), false},
		{"eq array", filter("data.tags", "eq", `["a", "b"]`), true},
		{"eq array order matters", filter("data.tags", "eq", `["b", "a"]`), false},
		{"eq null", filter("data.nothing", "eq", `null`), true},
		{"eq null vs false", filter("data.flag", "eq", `null`), false},
		{"eq false", filter("data.flag", "eq", `false`), true},
		{"null is present", filter("data.nothing", "exists", `true`), true},
		// absent fields.
		{"absent eq", filter("missing", "eq", `"x"`), false},
		{"absent neq", filter("missing", "neq", `"x"`), true},
		{"absent in", filter("data.missing", "in", `["x"]`), false},
		{"absent prefix", filter("data.missing", "prefix", `""`), false},
		{"absent suffix", filter("data.missing", "suffix", `""`), false},
		{"absent gt", filter("data.missing", "gt", `0`), false},
		{"absent gte", filter("data.missing", "gte", `0`), false},
		{"absent lt", filter("data.missing", "lt", `0`), false},
		{"absent lte", filter("data.missing", "lte", `0`), false},
		{"absent exists true", filter("missing", "exists", `true`), false},
		{"absent exists false", filter("missing", "exists", `false`), true},
		{"empty subject is absent", filter("dataschema", "exists", `false`), true},
		{"present exists true", filter("region", "exists", `true`), true},
		{"present exists false", filter("region", "exists", `false`), false},
		{"dotted key unreachable", filter("data.dotted.key", "exists", `true`), false},
		// in.
		{"in strings", filter("region", "in", `["eu", "us-west"]`), true},
		{"in strings miss", filter("region", "in", `["eu", "ap"]`), false},
		{"in strings vs number", filter("data.amount", "in", `["100"]`), false},
		{"in numbers", filter("data.amount", "in", `[1, 100.00]`), true},
		{"in mixed", filter("data.currency", "in", `[1, "EUR", null]`), true},
		{"in empty", filter("region", "in", `[]`), false},
		// prefix / suffix.
		{"prefix", filter("subject", "prefix", `"order:"`), true},
		{"prefix miss", filter("subject", "prefix", `"invoice:"`), false},
		{"suffix", filter("region", "suffix", `"-west"`), true},
		{"prefix on number", filter("data.amount", "prefix", `"1"`), false},
		// ordered comparisons.
		{"gte equal", filter("data.amount", "gte", `100`), true},
		{"gt equal", filter("data.amount", "gt", `100`), false},
		{"gt less", filter("data.amount", "gt", `99.999`), true},
		{"lt", filter("data.amount", "lt", `100.0001`), true},
		{"lte", filter("data.amount", "lte", `1e2`), true},
		{"negative lt", filter("data.neg", "lt", `-3`), true},
		{"negative gt", filter("data.neg", "gt", `-3.25`), false},
		{"negative gte", filter("data.neg", "gte", `-3.50`), true},
		{"big gt", filter("data.big", "gt", `12345678901234567889`), true},
		{"big lt", filter("data.big", "lt", `12345678901234567891`), true},
		{"extension number gt", filter("priority", "gt", `4`), true},
		{"float extension lt", filter("score", "lt", `3`), true},
		{"string gt", filter("data.currency", "gt", `"DKK"`), true},
		{"string lt", filter("data.currency", "lt", `"EUR"`), false},
		{"string lte", filter("data.currency", "lte", `"EUR"`), true},
		{"time gte", filter("time", "gte", `"2026-01-01T00:00:00.000Z"`), true},
		{"mixed number vs string", filter("data.amount", "gt", `"1"`), false},
		{"mixed string vs number", filter("data.currency", "gt", `1`), false},
		{"mixed bool vs number", filter("data.flag", "lt", `1`), false},
		{"mixed object vs number", filter("data.customer", "gte", `0`), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cf, err := compileFilter(tt.f)
			require.NoError(t, err)
			v := &eventView{ev: filterEvent()}
			require.Equal(t, tt.want, cf.eval(v))
		})
	}
}

func TestFilterAbsentData(t *testing.T) {
	t.Parallel()
	cases := map[string]*cloudevent.Event{
		"no data":     testEvent("a:b"),
		"binary data": {Type: "a:b", DataBase64: []byte{1, 2}},
		"bad json":    withData(testEvent("a:b"), `{"amount":`),
		"string data": withData(testEvent("a:b"), `"amount"`),
	}
	for name, ev := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, tt := range []struct {
				f    Filter
				want bool
			}{
				{filter("data.amount", "eq", `1`), false},
				{filter("data.amount", "neq", `1`), true},
				{filter("data.amount", "exists", `false`), true},
				{filter("data.amount", "exists", `true`), false},
			} {
				cf, err := compileFilter(tt.f)
				require.NoError(t, err)
				require.Equal(t, tt.want, cf.eval(&eventView{ev: ev}), tt.f)
			}
		})
	}
}

// TestNeqIsNotEq checks neq == !eq for every pair of field value and
// operand, present or absent.
func TestNeqIsNotEq(t *testing.T) {
	t.Parallel()
	values := []string{
		`null`, `true`, `false`, `0`, `-0.0`, `1`, `1.0`, `1e0`, `-1`, `2.5`,
		`12345678901234567890`, `""`, `"1"`, `"a"`, `[]`, `[1]`, `[1.0]`, `["1"]`, `{}`,
		`{"a":1}`, `{"a":1.0}`, `{"a":"1"}`,
	}
	data := "{"
	var dataSb167 strings.Builder
	for i, v := range values {
		if i > 0 {
			dataSb167.WriteString(",")
		}
		dataSb167.WriteString(`"f` + string(rune('a'+i)) + `":` + v)
	}
	data += dataSb167.String()
	data += "}"
	ev := withData(testEvent("a:b"), data)
	fields := []string{"data.missing"}
	for i := range values {
		fields = append(fields, "data.f"+string(rune('a'+i)))
	}
	trueCount := 0
	for _, field := range fields {
		for _, operand := range values {
			eq, err := compileFilter(filter(field, OpEq, operand))
			require.NoError(t, err)
			neq, err := compileFilter(filter(field, OpNeq, operand))
			require.NoError(t, err)
			v := &eventView{ev: ev}
			e := eq.eval(v)
			require.Equal(t, !e, neq.eval(v), "%s vs %s", field, operand)
			if e {
				trueCount++
			}
		}
	}
	// Each present value equals at least itself; numbers equal their
	// other spellings.
	require.Greater(t, trueCount, len(values))
}

func TestCompileFilterErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		f    Filter
		part string
	}{
		{"no field", filter("", "eq", `1`), "field"},
		{"data alone", filter("data", "eq", `1`), "field"},
		{"data_base64", filter("data_base64", "eq", `1`), "field"},
		{"empty path segment", filter("data.a..b", "eq", `1`), "field"},
		{"trailing dot", filter("data.", "eq", `1`), "field"},
		{"upper-case name", filter("Region", "eq", `1`), "field"},
		{"no op", filter("region", "", `1`), "op"},
		{"unknown op", filter("region", "like", `1`), "op"},
		{"no value", Filter{Field: "region", Op: "eq"}, "value"},
		{"bad json", filter("region", "eq", `{`), "value"},
		{"trailing json", filter("region", "eq", `1 2`), "value"},
		{"in not array", filter("region", "in", `"a"`), "value"},
		{"exists not bool", filter("region", "exists", `"yes"`), "value"},
		{"prefix not string", filter("region", "prefix", `1`), "value"},
		{"suffix not string", filter("region", "suffix", `null`), "value"},
		{"gt bool", filter("region", "gt", `true`), "value"},
		{"lte array", filter("region", "lte", `[1]`), "value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := compileFilter(tt.f)
			var fe *filterError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, tt.part, fe.part)
		})
	}
}

// TestDataDecodedOnce checks the data is decoded once per event, and not
// at all when no filter reads it.
func TestDataDecodedOnce(t *testing.T) {
	t.Parallel()
	f1, err := compileFilter(filter("data.amount", "gte", `1`))
	require.NoError(t, err)
	f2, err := compileFilter(filter("data.currency", "eq", `"EUR"`))
	require.NoError(t, err)
	f3, err := compileFilter(filter("region", "eq", `"us-west"`))
	require.NoError(t, err)

	v := &eventView{ev: filterEvent()}
	require.True(t, f3.eval(v))
	require.False(t, v.decoded)
	require.True(t, f1.eval(v))
	require.True(t, v.decoded)
	// Replacing the raw data now would change the answer if it were
	// decoded again.
	v.ev.Data = json.RawMessage(`{"currency": "USD"}`)
	require.True(t, f2.eval(v))
}
