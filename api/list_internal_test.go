package api

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPageSorted(t *testing.T) {
	t.Parallel()
	id := func(s string) string { return s }
	tests := []struct {
		name      string
		desc      bool
		limit     int
		after     string // the key a cursor points after, "" for the first page
		want      []string
		wantAfter string // the key the next cursor names, "" for none
	}{
		{"first page desc", true, 2, "", []string{"e", "d"}, "d"},
		{"next page desc", true, 2, "d", []string{"c", "b"}, "b"},
		{"last page desc", true, 2, "b", []string{"a"}, ""},
		{"cursor of a deleted item", true, 2, "cc", []string{"c", "b"}, "b"},
		{"all fit", true, 5, "", []string{"e", "d", "c", "b", "a"}, ""},
		{"asc", false, 3, "", []string{"a", "b", "c"}, "c"},
		{"asc next", false, 3, "c", []string{"d", "e"}, ""},
		{"past the end", false, 3, "z", []string{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			items := []string{"c", "a", "e", "b", "d"}
			cursor := ""
			if tt.after != "" {
				cursor = base64.RawURLEncoding.EncodeToString([]byte(tt.after))
			}
			got, next, err := pageSorted(items, id, tt.desc, tt.limit, cursor)
			require.NoError(t, err)
			require.Equal(t, strings.Join(tt.want, ","), strings.Join(got, ","))
			if tt.wantAfter == "" {
				require.Empty(t, next)
				return
			}
			require.Equal(t, base64.RawURLEncoding.EncodeToString([]byte(tt.wantAfter)), next)
		})
	}
	for _, bad := range []string{"@@", "=", "a b"} {
		_, _, err := pageSorted([]string{"a"}, id, true, 1, bad)
		require.Error(t, err, bad)
	}
}
