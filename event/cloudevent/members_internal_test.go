package cloudevent

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func memberCases() []string {
	return []string{
		`{}`, ` { } `, `{"a":1}`, `{"id":"x","id":"y"}`, `{"data":{"k":[1,"}",{"x":"\""}]},"type":"t"}`,
		`{"a":"\\","b":"\u00e9\ud83d\ude00","c":true,"d":null,"e":-1.5e3,"f":[]}`,
		"{\n\t\"specversion\" : \"1.0\" ,\r\n\"data\":\"x\"}",
		`{"k\u0065y":1}`, `{"a":1,}`, `[1]`, `null`, `"s"`, `{"a":1}x`, `{"a"}`, "{\"a\":\"\xff\"}",
		`{"data":[[[[]]]],"x":{"y":{"z":"]]]}}}"}}}`,
	}
}

// The fast split agrees with encoding/json's wherever it takes the input.
func checkSplit(t *testing.T, b []byte) {
	t.Helper()
	want, wantErr := decodeMembers(b)
	got, _, err := eventMembers(b)
	if wantErr != nil {
		require.EqualError(t, err, wantErr.Error(), "%q", b)
		return
	}
	require.NoError(t, err, "%q", b)
	require.Len(t, got, len(want), "%q", b)
	for i := range want {
		require.Equal(t, want[i].name, got[i].name, "%q", b)
		require.Equal(t, string(want[i].value), string(got[i].value), "%q member %s", b, want[i].name)
	}
}

func TestFastSplitAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, c := range memberCases() {
		checkSplit(t, []byte(c))
	}
	_, ok := scanMembers([]byte(`{"specversion":"1.0","id":"1","data":{"x":[1,2]}}`))
	require.True(t, ok, "the usual event takes the fast path")
	var many strings.Builder
	many.WriteString("{" + strings.Repeat(`"a":1,`, 40))
	for i := range 40 {
		many.WriteString(`"k` + strings.Repeat("x", i) + `":1,`)
	}
	manyJSON := strings.TrimSuffix(many.String(), ",") + "}"
	_, ok = scanMembers([]byte(manyJSON))
	require.False(t, ok, "past fastMembersMax names the general path takes it")
	checkSplit(t, []byte(manyJSON))
}

func FuzzFastSplit(f *testing.F) {
	for _, c := range memberCases() {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkSplit(t, b) })
}
