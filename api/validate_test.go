package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateDataAgainstAVersion(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	createType(t, ts, "shop.order.created", version("1.0", "CURRENT", orderSchema), version("2.0", "FINALISING", `{"type":"object","required":["total"]}`))

	tests := []struct {
		name    string
		path    string
		body    string
		status  int
		pointer []string
	}{
		{name: "valid", path: "1.0", body: `{"data":{"amount":10,"currency":"EUR"}}`, status: http.StatusOK},
		{
			name: "violations at their pointers", path: "1.0", body: `{"data":{"amount":"ten","currency":"GBP","x":1}}`,
			status: http.StatusUnprocessableEntity, pointer: []string{"/data/amount", "/data/currency", "/data/x"},
		},
		{
			name: "missing property at the object", path: "1.0", body: `{"data":{"amount":1}}`,
			status: http.StatusUnprocessableEntity, pointer: []string{"/data"},
		},
		{
			name: "a FINALISING version is checked too", path: "2.0", body: `{"data":{"amount":1}}`,
			status: http.StatusUnprocessableEntity, pointer: []string{"/data"},
		},
		{name: "no data", path: "1.0", body: `{}`, status: http.StatusUnprocessableEntity, pointer: []string{"/data"}},
		{name: "malformed", path: "1.0", body: `{"data":`, status: http.StatusBadRequest},
		{name: "unknown version", path: "9.9", body: `{"data":{}}`, status: http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := ts.do(t, http.MethodPost, "/api/event-types/shop.order.created/versions/"+tt.path+"/validate", tt.body)
			require.Equal(t, tt.status, resp.StatusCode, "%v", body)
			if tt.status == http.StatusOK {
				require.Equal(t, true, body["valid"])
				require.Equal(t, "CURRENT", body["status"])
				return
			}
			require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
			var got []string
			errs, _ := body["errors"].([]any)
			for _, e := range errs {
				got = append(got, e.(map[string]any)["pointer"].(string))
			}
			if tt.pointer != nil {
				require.Equal(t, tt.pointer, got, "%v", body)
			}
		})
	}

	resp, _ := ts.do(t, http.MethodPost, "/api/event-types/no.such/versions/1.0/validate", `{"data":{}}`)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}
