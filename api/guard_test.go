package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/api"
)

// rawDo sends one request with full control of Host and headers (the
// harness's do cannot set Host) and returns the status, the content type
// and the body.
func rawDo(t *testing.T, base, method, path, host, body string, headers ...string) (int, string, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, r)
	require.NoError(t, err)
	if host != "" {
		req.Host = host
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(raw)
}

// TestAuthOffAcceptsOnlyLoopbackHostNames: without API keys, a request
// whose Host names anything but the loopback interface (a DNS-rebinding
// page) is refused 421 on every route; loopback names with any port pass.
func TestAuthOffAcceptsOnlyLoopbackHostNames(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	for _, host := range []string{
		"evil.example", "evil.example:8080", "127.0.0.1.nip.io:8080", "10.0.0.1:8080",
		"[fe80::1]:8080", "localhost.evil.example", "0.0.0.0:8080",
	} {
		for _, path := range []string{"/api/event-types", "/api/subscriptions", "/ui/", "/metrics", "/no/such/route"} {
			status, ct, body := rawDo(t, ts.URL, http.MethodGet, path, host, "")
			require.Equal(t, http.StatusMisdirectedRequest, status, "%s %s: %s", host, path, body)
			require.Equal(t, api.ContentTypeProblem, ct)
		}
	}
	status, _, body := rawDo(t, ts.URL, http.MethodPost, "/api/event-types", "evil.example", `{"code":"a.b","name":"x"}`,
		"Content-Type", "application/json")
	require.Equal(t, http.StatusMisdirectedRequest, status, body)
	for _, host := range []string{
		"localhost", "localhost:8080", "LOCALHOST:1", "127.0.0.1", "127.0.0.1:80", "127.1.2.3:9",
		"[::1]", "[::1]:8080",
	} {
		status, _, body := rawDo(t, ts.URL, http.MethodGet, "/api/event-types", host, "")
		require.Equal(t, http.StatusOK, status, "%s: %s", host, body)
	}
}

// TestAuthOffRefusesOtherOrigins: without API keys, a request a browser
// sends for a page of another origin (Origin header) is refused 403 — also
// a POST without a body, which needs no JSON content type; the gateway's own
// dashboard (a loopback origin) and clients that send no Origin pass.
func TestAuthOffRefusesOtherOrigins(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	resp, sub := ts.do(t, http.MethodPost, "/api/subscriptions",
		`{"code":"s1","eventTypes":[{"eventTypeCode":"a.b"}],"target":"http://127.0.0.1:9/h"}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", sub)
	pause := "/api/subscriptions/" + sub["id"].(string) + "/pause"
	for _, origin := range []string{"https://evil.example", "http://evil.example:8080", "null", "http://127.0.0.1.nip.io"} {
		status, ct, body := rawDo(t, ts.URL, http.MethodPost, pause, "", "", "Origin", origin)
		require.Equal(t, http.StatusForbidden, status, "%s: %s", origin, body)
		require.Equal(t, api.ContentTypeProblem, ct)
	}
	resp, got := ts.do(t, http.MethodGet, "/api/subscriptions/"+sub["id"].(string), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "ACTIVE", got["status"], "no refused request paused it")
	status, _, body := rawDo(t, ts.URL, http.MethodPost, pause, "", "", "Origin", "http://localhost:8080")
	require.Equal(t, http.StatusOK, status, body)
	status, _, body = rawDo(t, ts.URL, http.MethodPost, pause, "", "", "Origin", strings.Replace(ts.URL, "127.0.0.1", "[::1]", 1))
	require.Equal(t, http.StatusOK, status, body)
}

// TestGuardOffWithKeys: with API keys, any Host and Origin reach the
// handlers (the keys protect them; deployments use their own names).
func TestGuardOffWithKeys(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withKeys(t))
	status, _, body := rawDo(t, ts.URL, http.MethodGet, "/api/event-types", "hooklane.internal.example:8080", "",
		"Authorization", "Bearer "+roleKeys["viewer"], "Origin", "https://dashboards.example")
	require.Equal(t, http.StatusOK, status, body)
}

// TestJSONBodiesNeedAJSONContentType: every operation whose body is JSON
// (openapi.json: requestBody application/json) answers 415 problem+json to a
// body sent as text/plain, as a form, or with no content type — what a
// browser's cross-site "simple" request can send — before reading it.
// application/json with parameters and application/*+json are JSON.
func TestJSONBodiesNeedAJSONContentType(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	var doc struct {
		Paths map[string]map[string]struct {
			RequestBody *struct {
				Content map[string]json.RawMessage `json:"content"`
			} `json:"requestBody"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(api.OpenAPI(), &doc))
	// Real objects behind the path parameters, so that no 404 comes first.
	resp, got := ts.do(t, http.MethodPost, "/api/event-types",
		`{"code":"ct.base","name":"n","versions":[{"version":"1.0","schema":{"type":"object"}}]}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", got)
	resp, sub := ts.do(t, http.MethodPost, "/api/subscriptions",
		`{"code":"ct","eventTypes":[{"eventTypeCode":"ct.base"}],"target":"http://127.0.0.1:9/h"}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", sub)
	resp, pool := ts.do(t, http.MethodPost, "/api/dispatch-pools", `{"code":"ct-pool","concurrency":1}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", pool)
	ids := map[string]string{"/api/subscriptions/": sub["id"].(string), "/api/dispatch-pools/": pool["id"].(string)}
	n := 0
	for p, ops := range doc.Paths {
		for method, op := range ops {
			if op.RequestBody == nil {
				continue
			}
			if _, ok := op.RequestBody.Content["application/cloudevents+json"]; ok {
				continue // ingest: its own rules (API.md §1), below
			}
			n++
			id := "01JD0000000000000000000000"
			for prefix, v := range ids {
				if strings.HasPrefix(p, prefix) {
					id = v
				}
			}
			path := strings.NewReplacer("{id}", id, "{code}", "ct.base", "{version}", "1.0").Replace(p)
			m := strings.ToUpper(method)
			for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "", "application/jsonx", "text/json"} {
				var hdr []string
				if ct != "" {
					hdr = []string{"Content-Type", ct}
				}
				status, got, body := rawDo(t, ts.URL, m, path, "", `{"code":"x.y","name":"n"}`, hdr...)
				require.Equal(t, http.StatusUnsupportedMediaType, status, "%s %s with %q: %s", m, p, ct, body)
				require.Equal(t, api.ContentTypeProblem, got)
			}
		}
	}
	require.GreaterOrEqual(t, n, 14, "every JSON-body operation was tried")

	for i, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON", "application/merge-patch+json"} {
		code := "ct.t" + string(rune('a'+i))
		status, _, body := rawDo(t, ts.URL, http.MethodPost, "/api/event-types", "", `{"code":"`+code+`","name":"n"}`, "Content-Type", ct)
		require.Equal(t, http.StatusCreated, status, "%q: %s", ct, body)
	}
	status, _, body := rawDo(t, ts.URL, http.MethodPatch, "/api/event-types/ct.ta", "", `{"name":"renamed"}`,
		"Content-Type", "application/merge-patch+json")
	require.Equal(t, http.StatusOK, status, body)
}

// TestIngestKeepsItsContentTypeRules: the JSON content-type rule does not
// touch ingest: binary mode takes any content type with ce-* headers, and a
// body with neither a CloudEvents nor a JSON type is still its 415.
func TestIngestKeepsItsContentTypeRules(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	status, _, body := rawDo(t, ts.URL, http.MethodPost, "/api/event-types", "", `{"code":"ing.x","name":"n"}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusCreated, status, body)
	status, _, body = rawDo(t, ts.URL, http.MethodPost, "/api/events", "", "hello",
		"Content-Type", "text/plain", "ce-specversion", "1.0", "ce-id", "b-1", "ce-source", "/t", "ce-type", "ing.x")
	require.Equal(t, http.StatusCreated, status, body)
	status, _, body = rawDo(t, ts.URL, http.MethodPost, "/api/events", "",
		`{"specversion":"1.0","id":"s-1","source":"/t","type":"ing.x"}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusCreated, status, body)
	status, ct, body := rawDo(t, ts.URL, http.MethodPost, "/api/events", "",
		`{"specversion":"1.0","id":"s-2","source":"/t","type":"ing.x"}`, "Content-Type", "text/plain")
	require.Equal(t, http.StatusUnsupportedMediaType, status, body)
	require.Equal(t, api.ContentTypeProblem, ct)
}
