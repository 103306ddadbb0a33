package cloudevent

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The fast paths of the event's JSON must give exactly what encoding/json
// gives: these compare them on the strings that take each branch.
var jsonStrings = []string{ //nolint:gochecknoglobals // read-only test fixture
	"", "plain", "order:o-12345", "with space", "quote\"inside", `back\slash`, "<html>", "a&b", "tab\there",
	"new\nline", "\x00nul", "\x7fdel", "héllo", "日本語", "\u2028sep", "bad\xffutf8", "~!@#$%^*()_+{}|:?[];',./", //nolint:gosmopolitan // non-ASCII on purpose: it takes the slow path
}

func TestAppendJSONStringMatchesMarshal(t *testing.T) {
	t.Parallel()
	for _, s := range jsonStrings {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(AppendJSONString(nil, s)), "%q", s)
		require.Equal(t, "x"+string(want), string(AppendJSONString([]byte("x"), s)), "appends")
	}
}

func TestRawStringMatchesUnmarshal(t *testing.T) {
	t.Parallel()
	raws := []string{`"\u00e9"`, `"a\"b"`, `"\ud83d\ude00"`, `12`, `true`, `null`, `{"a":1}`, `["x"]`, "\"bad\xffutf8\""}
	for _, s := range jsonStrings {
		b, err := json.Marshal(s)
		require.NoError(t, err)
		raws = append(raws, string(b))
	}
	for _, raw := range raws {
		var want string
		wantErr := json.Unmarshal([]byte(raw), &want)
		got, ok := rawString([]byte(raw))
		require.Equal(t, wantErr == nil, ok, "%s", raw)
		require.Equal(t, want, got, "%s", raw)
	}
}

func FuzzRawString(f *testing.F) {
	for _, s := range jsonStrings {
		f.Add([]byte(`"` + s + `"`))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // rawString is only given valid JSON
		}
		var want string
		wantErr := json.Unmarshal(raw, &want)
		got, ok := rawString(raw)
		if (wantErr == nil) != ok || got != want {
			t.Fatalf("rawString(%q) = %q, %v; json.Unmarshal: %q, %v", raw, got, ok, want, wantErr)
		}
	})
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendJSONString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendJSONString(%q) = %s, json.Marshal: %s", s, got, want)
		}
	})
}

// TestEventJSONRoundTrip: an event with every kind of attribute and
// extension comes back equal, and encodes as before the fast paths (keys
// in order, extensions sorted, HTML characters escaped).
func TestEventJSONRoundTrip(t *testing.T) {
	t.Parallel()
	ev := Event{
		SpecVersion: "1.0", ID: "e<1>", Source: "/s&t", Type: "a.b", Subject: "sub \"q\"",
		Time: time.Date(2026, 11, 22, 10, 0, 0, 123e6, time.UTC), DataContentType: "application/json", DataSchema: "https://x/é",
		Data:       json.RawMessage(`{"k":[1,2]}`),
		Extensions: map[string]any{"zeta": "last", "alpha": true, "num": json.Number("1.5"), "no": false, "txt": "line\nbreak"},
	}
	raw, err := ev.MarshalJSON()
	require.NoError(t, err)
	require.JSONEq(t, `{"specversion":"1.0","id":"e<1>","source":"/s&t","type":"a.b","subject":"sub \"q\"",
		"time":"2026-11-22T10:00:00.123Z","datacontenttype":"application/json","dataschema":"https://x/é",
		"alpha":true,"no":false,"num":1.5,"txt":"line\nbreak","zeta":"last","data":{"k":[1,2]}}`, string(raw))
	require.Contains(t, string(raw), `"id":"e\u003c1\u003e"`, "HTML characters escaped as json.Marshal does")
	require.Contains(t, string(raw), `"alpha":true,"no":false,"num":1.5,"txt":"line\nbreak","zeta":"last","data":`)

	var back Event
	require.NoError(t, back.UnmarshalJSON(raw))
	require.Equal(t, ev, back)

	b64 := Event{SpecVersion: "1.0", ID: "1", Source: "/s", Type: "a.b", DataBase64: []byte{0, 1, 2}}
	raw, err = b64.MarshalJSON()
	require.NoError(t, err)
	require.JSONEq(t, `{"specversion":"1.0","id":"1","source":"/s","type":"a.b","data_base64":"AAEC"}`, string(raw))
	back = Event{}
	require.NoError(t, back.UnmarshalJSON(raw))
	require.Equal(t, b64, back)
}

func TestUnmarshalAttributeTypes(t *testing.T) {
	t.Parallel()
	var ev Event
	err := ev.UnmarshalJSON([]byte(`{"specversion":1,"id":"x","source":"/s","type":"a.b","ext":{"o":1},"nil":null,"flag":true}`))
	require.Error(t, err)
	require.ErrorContains(t, err, "specversion: must be a string")
	require.ErrorContains(t, err, "ext: extension values must be a string, number or boolean")
	require.Equal(t, true, ev.Extensions["flag"])
	require.NotContains(t, ev.Extensions, "nil", "a null extension is absent")
}
