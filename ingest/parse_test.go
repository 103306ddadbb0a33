package ingest_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/ingest"
)

func TestParse(t *testing.T) {
	t.Parallel()
	const ok = `{"specversion":"1.0","id":"1","source":"/s","type":"a.b","data":{"x":1}}`
	limits := ingest.Limits{MaxEventBytes: 200, MaxRequestBytes: 1000, MaxBatch: 3}
	ce := []string{"ce-specversion", "1.0", "ce-id", "1", "ce-source", "/s", "ce-type", "a.b"}
	for _, tc := range []struct {
		name       string
		headers    []string
		body       string
		wantMode   ingest.Mode
		wantData   string // the event's data as JSON, when accepted
		wantBase64 bool
		wantStatus int
		wantPtrs   []string
	}{
		{name: "structured", headers: []string{"Content-Type", ingest.ContentTypeStructured}, body: ok, wantMode: ingest.ModeStructured, wantData: `{"x":1}`},
		{name: "plain JSON is structured", headers: []string{"Content-Type", "application/json; charset=utf-8"}, body: ok, wantMode: ingest.ModeStructured, wantData: `{"x":1}`},
		{name: "batch", headers: []string{"Content-Type", ingest.ContentTypeBatch}, body: "[" + ok + "]", wantMode: ingest.ModeBatch, wantData: `{"x":1}`},
		{name: "binary JSON", headers: append([]string{"Content-Type", "application/json"}, ce...), body: `{"x":1}`, wantMode: ingest.ModeBinary, wantData: `{"x":1}`},
		{name: "binary text", headers: append([]string{"Content-Type", "text/plain"}, ce...), body: `hi`, wantMode: ingest.ModeBinary, wantData: `"hi"`},
		{name: "binary bytes", headers: append([]string{"Content-Type", "application/octet-stream"}, ce...), body: "\x00\x01", wantMode: ingest.ModeBinary, wantBase64: true},
		{name: "unsupported type", headers: []string{"Content-Type", "text/plain"}, body: ok, wantStatus: 415},
		{name: "no content type", body: ok, wantStatus: 415},
		{name: "malformed", headers: []string{"Content-Type", ingest.ContentTypeStructured}, body: `{"id":`, wantStatus: 400, wantPtrs: []string{""}},
		{name: "not an object", headers: []string{"Content-Type", ingest.ContentTypeStructured}, body: `[1]`, wantStatus: 400, wantPtrs: []string{""}},
		{name: "missing attributes", headers: []string{"Content-Type", ingest.ContentTypeStructured}, body: `{"specversion":"1.0","source":"/s","type":"a.b"}`, wantStatus: 400, wantPtrs: []string{"/id"}},
		{name: "batch item prefixed", headers: []string{"Content-Type", ingest.ContentTypeBatch}, body: "[" + ok + `,{"specversion":"1.0","id":"2","type":"a.b"}]`, wantStatus: 400, wantPtrs: []string{"/1/source"}},
		{name: "empty batch", headers: []string{"Content-Type", ingest.ContentTypeBatch}, body: `[]`, wantStatus: 400, wantPtrs: []string{""}},
		{name: "batch not an array", headers: []string{"Content-Type", ingest.ContentTypeBatch}, body: ok, wantStatus: 400, wantPtrs: []string{""}},
		{name: "batch too long", headers: []string{"Content-Type", ingest.ContentTypeBatch}, body: "[" + strings.Repeat(ok+",", 3) + ok + "]", wantStatus: 413},
		{name: "event too large", headers: []string{"Content-Type", ingest.ContentTypeStructured}, body: ok[:len(ok)-1] + `,"pad":"` + strings.Repeat("x", 200) + `"}`, wantStatus: 413},
		{name: "request too large", headers: []string{"Content-Type", ingest.ContentTypeBatch}, body: "[" + strings.Repeat(" ", 1000) + ok + "]", wantStatus: 413},
		{name: "binary malformed data", headers: append([]string{"Content-Type", "application/json"}, ce...), body: `{"x":`, wantStatus: 400, wantPtrs: []string{"/data"}},
		{name: "binary datacontenttype header", headers: append([]string{"Content-Type", "application/json", "ce-datacontenttype", "text/plain"}, ce...), body: `{}`, wantStatus: 400, wantPtrs: []string{"/datacontenttype"}},
		{name: "binary bad time", headers: append([]string{"Content-Type", "application/json", "ce-time", "yesterday"}, ce...), body: `{}`, wantStatus: 400, wantPtrs: []string{"/time"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/api/events", strings.NewReader(tc.body))
			for i := 0; i < len(tc.headers); i += 2 {
				r.Header.Set(tc.headers[i], tc.headers[i+1])
			}
			req, err := ingest.Parse(r, limits)
			if tc.wantStatus != 0 {
				var ie *ingest.Error
				require.ErrorAs(t, err, &ie, "%v", err)
				require.Equal(t, tc.wantStatus, ie.Status, "%v", ie)
				if tc.wantPtrs != nil {
					ptrs := make([]string, len(ie.Violations))
					for i, v := range ie.Violations {
						ptrs[i] = v.Pointer
					}
					require.Equal(t, tc.wantPtrs, ptrs, "%v", ie)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantMode, req.Mode)
			require.Len(t, req.Events, 1)
			ev := req.Events[0]
			if tc.wantBase64 {
				require.Nil(t, ev.Data)
				require.Equal(t, []byte(tc.body), ev.DataBase64)
				return
			}
			require.JSONEq(t, tc.wantData, string(ev.Data))
			b, err := json.Marshal(&ev)
			require.NoError(t, err)
			require.Contains(t, string(b), `"type":"a.b"`)
		})
	}
}
