package cloudevent_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/event/cloudevent"
)

func TestCheckValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, value string
		wantErr     string
	}{
		{"empty", "", ""},
		{"plain", "order:12345", ""},
		{"tab and space", "a\tb c", ""},
		{"utf-8", "héllo 日本", ""}, //nolint:gosmopolitan // non-Latin text is what this case checks
		{"visible punctuation", `!"#$%&'()*+,-./:;<=>?@[\]^_{|}~`, ""},
		{"line feed", "a\nb", "U+000A at byte 1"},
		{"carriage return", "ab\r", "U+000D at byte 2"},
		{"nul", "\x00", "U+0000 at byte 0"},
		{"escape", "x\x1b[31m", "U+001B at byte 1"},
		{"delete", "a\x7f", "U+007F at byte 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := cloudevent.CheckHeaderValue(tt.value)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestCheckName(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"X-Team", "x_team", "A1", "!#$%&'*+-.^_`|~"} {
		require.NoError(t, cloudevent.CheckHeaderName(ok), ok)
		require.True(t, cloudevent.ValidHeaderName(ok), ok)
	}
	for _, bad := range []string{"", "X Team", "X:Team", "X\nTeam", "é", "a/b", `"q"`} {
		require.Error(t, cloudevent.CheckHeaderName(bad), "%q", bad)
		require.False(t, cloudevent.ValidHeaderName(bad), "%q", bad)
	}
}

// TestCheckValueMatchesClient: a value CheckValue accepts is one net/http's
// client sends, and one it refuses is one the client refuses.
func TestCheckValueMatchesClient(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(srv.Close)
	for b := range 256 {
		v := fmt.Sprintf("a%cb", rune(b))
		if b >= 0x80 {
			v = "a" + string([]byte{byte(b)}) + "b"
		}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
		require.NoError(t, err)
		req.Header.Set("X-Probe", v)
		resp, sendErr := srv.Client().Do(req)
		if sendErr == nil {
			require.NoError(t, resp.Body.Close())
		}
		require.Equal(t, sendErr == nil, cloudevent.CheckHeaderValue(v) == nil, "byte 0x%02x: client error %v", b, sendErr)
	}
}

func ExampleCheckHeaderValue() {
	fmt.Println(cloudevent.CheckHeaderValue("order:12345"))
	fmt.Println(cloudevent.CheckHeaderValue("evil\r\nX-Injected: 1"))
	// Output:
	// <nil>
	// must not contain control characters (U+000D at byte 4): it is sent as an HTTP header
}
