package api

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPointerAtTypeErrors(t *testing.T) {
	t.Parallel()
	type inner struct {
		A []struct {
			B int `json:"b"`
		} `json:"a"`
		H map[string]string `json:"headers"`
		P *struct {
			Q int `json:"q"`
		} `json:"p"`
		L []int `json:"l"`
	}
	type outer struct {
		inner
		S *string `json:"secret"`
	}
	tests := []struct{ body, want string }{
		{`{"a":[{"b":1},{"b":"x"}]}`, "/a/1/b"},
		{`{"headers":{"X-Team":5}}`, "/headers/X-Team"},
		{`{"headers":[1]}`, "/headers"},
		{`{"p":{"q":"x"}}`, "/p/q"},
		{` { "secret" : 5 } `, "/secret"},
		{`{"a":5}`, "/a"},
		{`{"l":[1,2,{"x":1}]}`, "/l/2"},
		{`{"a/b":1,"a":[{"b":{"c":[true]}}]}`, "/a/0/b"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			t.Parallel()
			var o outer
			var te *json.UnmarshalTypeError
			require.ErrorAs(t, json.Unmarshal([]byte(tt.body), &o), &te)
			got, found := pointerAt([]byte(tt.body), te.Offset)
			require.True(t, found)
			require.Equal(t, tt.want, got)
		})
	}
}
