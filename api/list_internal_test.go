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
			got, next := pageSorted(items, id, tt.desc, tt.limit, tt.after)
			require.Equal(t, strings.Join(tt.want, ","), strings.Join(got, ","))
			require.Equal(t, tt.wantAfter, next)
		})
	}
}

func TestCursorCodec(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"01JD0000000000000000000000", "2026-01-24T14:00:00.123Z order.created", "w:1", "ü"} {
		got, err := decodeCursor("/api/events", encodeCursor("/api/events", key))
		require.NoError(t, err)
		require.Equal(t, key, got)
	}
	bad := []string{
		"@@", "=", "a b", "01JD0000000000000000000000", // not base64url, or a raw store id
		base64.RawURLEncoding.EncodeToString([]byte("abc")),                     // shorter than a tag
		encodeCursor("/api/events", ""),                                         // no key
		encodeCursor("/api/dispatch-jobs", "01JD0000000000000000000000"),        // another list's
		base64.RawURLEncoding.EncodeToString([]byte("\x00\x00\x00\x0001JD000")), // a forged tag
	}
	for _, c := range bad {
		_, err := decodeCursor("/api/events", c)
		require.Error(t, err, c)
		var p *Problem
		require.ErrorAs(t, err, &p)
		require.Equal(t, 422, p.Status)
	}
}
