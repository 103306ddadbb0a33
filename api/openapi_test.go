package api_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/api"
)

// notYetRouted lists the operations API.md documents that no engineer has
// routed yet. Each is documented in openapi.json; remove an entry when its
// route lands (the drift test then checks it like any other).
var notYetRouted = []string{ //nolint:gochecknoglobals // test fixture
}

var ginParam = regexp.MustCompile(`[:*]([A-Za-z_]+)`)

// openAPIPath turns a gin route ("/api/events/:id") into its OpenAPI form.
func openAPIPath(route string) string { return ginParam.ReplaceAllString(route, "{$1}") }

func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI())
	require.NoError(t, err)
	return doc
}

func TestOpenAPIIsValid31(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	require.True(t, doc.IsOpenAPI31OrLater(), "version %s", doc.OpenAPI)
	require.NoError(t, doc.Validate(t.Context()))
}

func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	resp, body := ts.do(t, http.MethodGet, "/api/openapi.json", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	require.Equal(t, "3.1.0", body["openapi"])
}

// TestOpenAPIDrift checks the document against the real gin routes: every
// registered route is documented, and every documented operation is
// registered or listed in notYetRouted.
func TestOpenAPIDrift(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	documented := map[string]bool{}
	for p, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+p] = true
		}
	}
	routed := map[string]bool{}
	for _, r := range routesOf(t) {
		routed[r] = true
		require.True(t, documented[r], "route %s is registered but not documented in api/openapi.json", r)
	}
	for op := range documented {
		require.True(t, routed[op] || slices.Contains(notYetRouted, op),
			"%s is documented in api/openapi.json but neither routed nor listed in notYetRouted", op)
	}
}

// routesOf returns every registered route as "METHOD /openapi/{path}".
func routesOf(t *testing.T) []string {
	t.Helper()
	srv := api.New(api.Config{})
	var out []string
	for _, r := range srv.Routes() {
		out = append(out, r.Method+" "+openAPIPath(r.Path))
	}
	require.NotEmpty(t, out)
	return out
}

// rolesOf returns the roles openapi.json allows on each operation
// (x-hooklane-roles).
func rolesOf(t *testing.T) map[string][]string {
	t.Helper()
	var raw struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(api.OpenAPI(), &raw))
	out := map[string][]string{}
	for p, ops := range raw.Paths {
		for method, body := range ops {
			var op struct {
				Roles []string `json:"x-hooklane-roles"` //nolint:tagliatelle // OpenAPI extensions are x- names, kebab-case by convention
			}
			require.NoError(t, json.Unmarshal(body, &op))
			require.NotEmpty(t, op.Roles, "%s %s has no x-hooklane-roles", method, p)
			out[strings.ToUpper(method)+" "+p] = op.Roles
		}
	}
	return out
}
