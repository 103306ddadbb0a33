package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAllowUnknownTypes checks HOOKLANE_ALLOW_UNKNOWN_TYPES both ways: strict
// by default (422 at /type), accepting unregistered types when set.
func TestAllowUnknownTypes(t *testing.T) {
	t.Parallel()
	ev := `{"specversion":"1.0","id":"u-1","source":"/s","type":"never.registered","data":{"x":1}}`
	for _, tc := range []struct {
		env  map[string]string
		want int
	}{
		{nil, http.StatusUnprocessableEntity},
		{map[string]string{"HOOKLANE_ALLOW_UNKNOWN_TYPES": "false"}, http.StatusUnprocessableEntity},
		{map[string]string{"HOOKLANE_ALLOW_UNKNOWN_TYPES": "true"}, http.StatusCreated},
	} {
		gw := startGateway(t, tc.env)
		status, _, body := gw.do(t, "POST", "/api/events", "application/cloudevents+json", ev, nil)
		require.Equal(t, tc.want, status, "env %v: %v", tc.env, body)
		if tc.want == http.StatusUnprocessableEntity {
			require.Equal(t, []any{map[string]any{"pointer": "/type", "message": "is not a registered event type"}}, body["errors"])
		}
	}
}
