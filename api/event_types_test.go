package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/api"
	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/ingest"
)

// orderSchema is the schema the event type tests register: every common
// mistake of a producer breaks one of its rules.
const orderSchema = `{"type":"object","required":["amount","currency"],"additionalProperties":false,
	"properties":{"amount":{"type":"number"},"currency":{"enum":["EUR","USD"]},
	"email":{"type":"string","format":"email"},
	"lines":{"type":"array","items":{"type":"object","required":["sku"],"properties":{"sku":{"type":"string"}}}}}}`

// createType registers code with the given versions (raw JSON objects).
func createType(t testing.TB, s *testServer, code string, versions ...string) {
	t.Helper()
	body := fmt.Sprintf(`{"code":%q,"name":"Test type","versions":[`, code)
	var bodySb26 strings.Builder
	for i, v := range versions {
		if i > 0 {
			bodySb26.WriteString(",")
		}
		bodySb26.WriteString(v)
	}
	body += bodySb26.String()
	resp, got := s.do(t, http.MethodPost, "/api/event-types", body+"]}")
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", got)
}

func version(v, status, sch string) string {
	return fmt.Sprintf(`{"version":%q,"status":%q,"schema":%s}`, v, status, sch)
}

// problem is the body of a problem+json answer, as decoded by do.
func problem(status int, detail string, errs ...[2]string) map[string]any {
	p := map[string]any{
		"type":   "https://hooklane.dev/problems/" + map[int]string{400: "bad-request", 404: "not-found", 409: "conflict", 422: "unprocessable-entity"}[status],
		"title":  http.StatusText(status),
		"status": float64(status),
		"detail": detail,
	}
	if len(errs) > 0 {
		list := make([]any, len(errs))
		for i, e := range errs {
			list[i] = map[string]any{"pointer": e[0], "message": e[1]}
		}
		p["errors"] = list
	}
	return p
}

func TestEventTypeCreateAndGet(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	resp, body := s.do(t, http.MethodPost, "/api/event-types", map[string]any{"code": "shop.order.created", "name": "Order created"})
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", body)
	require.Equal(t, "/api/event-types/shop.order.created", resp.Header.Get("Location"))
	require.Equal(t, "CURRENT", body["status"])
	require.Equal(t, []any{}, body["versions"])

	resp, body = s.do(t, http.MethodGet, "/api/event-types/shop.order.created", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "Order created", body["name"])

	resp, body = s.do(t, http.MethodPost, "/api/event-types", `{"code":"shop.order.created","name":"again"}`)
	require.Equal(t, http.StatusConflict, resp.StatusCode, "%v", body)
	require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
}

// TestVersionStatusMoves checks every (from, to) pair of version statuses.
func TestVersionStatusMoves(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	statuses := []string{"FINALISING", "CURRENT", "DEPRECATED"}
	allowed := map[[2]string]bool{
		{"FINALISING", "CURRENT"}: true, {"CURRENT", "DEPRECATED"}: true,
		// Asking for the status a version has is no move.
		{"FINALISING", "FINALISING"}: true, {"CURRENT", "CURRENT"}: true, {"DEPRECATED", "DEPRECATED"}: true,
	}
	for i, from := range statuses {
		for j, to := range statuses {
			code := fmt.Sprintf("move.v%d.v%d", i, j)
			initial := from
			if from == "DEPRECATED" {
				initial = "CURRENT"
			}
			createType(t, s, code, version("1.0", initial, `{"type":"object"}`))
			path := "/api/event-types/" + code + "/versions/1.0"
			if from == "DEPRECATED" {
				resp, body := s.do(t, http.MethodPatch, path, `{"status":"DEPRECATED"}`)
				require.Equal(t, http.StatusOK, resp.StatusCode, "%v", body)
			}
			resp, body := s.do(t, http.MethodPatch, path, map[string]any{"status": to})
			if allowed[[2]string{from, to}] {
				require.Equal(t, http.StatusOK, resp.StatusCode, "%s → %s: %v", from, to, body)
				require.Equal(t, to, body["status"])
				continue
			}
			require.Equal(t, http.StatusConflict, resp.StatusCode, "%s → %s: %v", from, to, body)
			require.Equal(t, problem(http.StatusConflict, fmt.Sprintf("a version moves FINALISING → CURRENT → DEPRECATED; %s → %s is not allowed", from, to)), body)
			_, got := s.do(t, http.MethodGet, path, nil)
			require.Equal(t, from, got["status"], "a refused move changes nothing")
		}
	}
	createType(t, s, "move.bogus", version("1.0", "FINALISING", `{}`))
	resp, body := s.do(t, http.MethodPatch, "/api/event-types/move.bogus/versions/1.0", `{"status":"RETIRED"}`)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Equal(t, problem(422, "status must be CURRENT or DEPRECATED", [2]string{"/status", "must be CURRENT or DEPRECATED"}), body)
	resp, _ = s.do(t, http.MethodPatch, "/api/event-types/move.bogus/versions/9.9", `{"status":"CURRENT"}`)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = s.do(t, http.MethodPatch, "/api/event-types/move.none/versions/1.0", `{"status":"CURRENT"}`)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// TestVersionSchemaAndDelete checks that only a FINALISING version's schema
// may change and only a FINALISING version may be deleted.
func TestVersionSchemaAndDelete(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	for _, tc := range []struct {
		status     string
		wantPatch  int
		wantDelete int
	}{
		{"FINALISING", http.StatusOK, http.StatusNoContent},
		{"CURRENT", http.StatusConflict, http.StatusConflict},
		{"DEPRECATED", http.StatusConflict, http.StatusConflict},
	} {
		code := "imm." + map[string]string{"FINALISING": "f", "CURRENT": "c", "DEPRECATED": "d"}[tc.status]
		initial := tc.status
		if initial == "DEPRECATED" {
			initial = "CURRENT"
		}
		createType(t, s, code, version("1.0", initial, `{"type":"object"}`))
		path := "/api/event-types/" + code + "/versions/1.0"
		if tc.status == "DEPRECATED" {
			resp, _ := s.do(t, http.MethodPatch, path, `{"status":"DEPRECATED"}`)
			require.Equal(t, http.StatusOK, resp.StatusCode)
		}
		resp, body := s.do(t, http.MethodPatch, path, `{"schema":{"type":"object","required":["id"]}}`)
		require.Equal(t, tc.wantPatch, resp.StatusCode, "%s: %v", tc.status, body)
		_, got := s.do(t, http.MethodGet, path, nil)
		if tc.wantPatch == http.StatusOK {
			require.Equal(t, []any{"id"}, got["schema"].(map[string]any)["required"])
		} else {
			require.Equal(t, problem(409, "the schema of a "+tc.status+" version cannot change"), body)
			require.Equal(t, map[string]any{"type": "object"}, got["schema"], "a refused patch changes nothing")
		}
		resp, body = s.do(t, http.MethodDelete, path, nil)
		require.Equal(t, tc.wantDelete, resp.StatusCode, "%s: %v", tc.status, body)
		resp, _ = s.do(t, http.MethodGet, path, nil)
		if tc.wantDelete == http.StatusNoContent {
			require.Equal(t, http.StatusNotFound, resp.StatusCode)
		} else {
			require.Equal(t, problem(409, "only a FINALISING version can be deleted"), body)
			require.Equal(t, http.StatusOK, resp.StatusCode)
		}
	}
	resp, _ := s.do(t, http.MethodDelete, "/api/event-types/imm.c/versions/7.0", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestVersionCreate(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	createType(t, s, "ver.create", version("1.0", "CURRENT", `{}`))
	const compileFail = "does not compile as JSON Schema: "
	for _, tc := range []struct {
		name     string
		body     string
		want     int
		wantErrs [][2]string
	}{
		{name: "2020-12", body: `{"version":"1.1","schema":{"type":"object","prefixItems":[{"type":"string"}]}}`, want: 201},
		{name: "draft-07", body: `{"version":"1.2","schema":{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"a":{"type":"string"}},"items":[{"$ref":"#/definitions/a"}]}}`, want: 201},
		{name: "CURRENT at once", body: `{"version":"1.10","status":"CURRENT","schema":{}}`, want: 201},
		{name: "exists", body: `{"version":"1.0","schema":{}}`, want: 409},
		{name: "bad version", body: `{"version":"1","schema":{}}`, want: 422, wantErrs: [][2]string{{"/version", `must be MAJOR.MINOR, e.g. "1.0"`}}},
		{name: "leading zero", body: `{"version":"01.0","schema":{}}`, want: 422, wantErrs: [][2]string{{"/version", `must be MAJOR.MINOR, e.g. "1.0"`}}},
		{name: "new DEPRECATED", body: `{"version":"3.0","status":"DEPRECATED","schema":{}}`, want: 422, wantErrs: [][2]string{{"/status", "a new version must be FINALISING or CURRENT"}}},
		{name: "no schema", body: `{"version":"3.0"}`, want: 422, wantErrs: [][2]string{{"/schema", "is required"}}},
		{name: "bad schema type", body: `{"version":"3.0","schemaType":"AVRO","schema":{}}`, want: 422, wantErrs: [][2]string{{"/schemaType", `must be "JSON_SCHEMA"`}}},
		{
			name: "unknown type name", body: `{"version":"3.0","schema":{"type":"object","properties":{"amount":{"type":"nummber"}}}}`, want: 422,
			wantErrs: [][2]string{{"/schema/properties/amount/type", compileFail + "value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'"}},
		},
		{
			name: "draft-07 rules when named", body: `{"version":"3.0","schema":{"$schema":"http://json-schema.org/draft-07/schema#","exclusiveMinimum":true}}`, want: 422,
			wantErrs: [][2]string{{"/schema/exclusiveMinimum", compileFail + "got boolean, want number"}},
		},
		{
			name: "bad regex", body: `{"version":"3.0","schema":{"properties":{"sku":{"pattern":"("}}}}`, want: 422,
			wantErrs: [][2]string{{"/schema/properties/sku/pattern", compileFail + "'(' is not valid regex: error parsing regexp: missing closing ): `(`"}},
		},
	} {
		resp, body := s.do(t, http.MethodPost, "/api/event-types/ver.create/versions", tc.body)
		require.Equal(t, tc.want, resp.StatusCode, "%s: %v", tc.name, body)
		if tc.want == 201 {
			require.Equal(t, "/api/event-types/ver.create/versions/"+body["version"].(string), resp.Header.Get("Location"))
			continue
		}
		if tc.wantErrs != nil {
			require.Equal(t, problem(422, "the schema version is invalid", tc.wantErrs...), body, tc.name)
		}
	}
	// A schema in the versions of a new type is located by its index.
	resp, body := s.do(t, http.MethodPost, "/api/event-types", `{"code":"ver.create2","name":"x","versions":[{"version":"1.0","schema":{}},{"version":"1.0","schema":{"required":"a"}}]}`)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Equal(t, problem(422, "the event type is invalid",
		[2]string{"/versions/1/schema/required", compileFail + "got string, want array"},
		[2]string{"/versions/1/version", "is listed twice"}), body)
	// A local file named by $ref is neither read nor echoed.
	resp, body = s.do(t, http.MethodPost, "/api/event-types/ver.create/versions", `{"version":"4.0","schema":{"$ref":"file:///etc/passwd"}}`)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v", body)
	require.Contains(t, fmt.Sprint(body["errors"]), "schemas must be self-contained")
}

func TestEventTypePatch(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	createType(t, s, "patch.me")
	resp, body := s.do(t, http.MethodPatch, "/api/event-types/patch.me", `{"name":"New name","description":"d"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", body)
	require.Equal(t, "New name", body["name"])
	require.Equal(t, "d", body["description"])
	require.Equal(t, "CURRENT", body["status"])
	for _, tc := range []struct {
		body string
		want map[string]any
	}{
		{`{"name":"  "}`, problem(422, "name must not be empty", [2]string{"/name", "must not be empty"})},
		{`{"status":"DELETED"}`, problem(422, "status must be CURRENT or ARCHIVE", [2]string{"/status", "must be CURRENT or ARCHIVE"})},
		{`{"name":7}`, problem(422, "a field has the wrong type", [2]string{"/name", "must be a string"})},
	} {
		resp, body := s.do(t, http.MethodPatch, "/api/event-types/patch.me", tc.body)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, tc.body)
		require.Equal(t, tc.want, body, tc.body)
	}
	resp, _ = s.do(t, http.MethodPatch, "/api/event-types/patch.none", `{"name":"x"}`)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// TestEventTypeArchive checks that an ARCHIVE type rejects new events and
// accepts them again once CURRENT.
func TestEventTypeArchive(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	createType(t, s, "arch.type")
	ev := `{"specversion":"1.0","id":"%s","source":"/s","type":"arch.type"}`
	resp, body := s.do(t, http.MethodPost, "/api/events", fmt.Sprintf(ev, "a1"), "Content-Type", ingest.ContentTypeStructured)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", body)

	resp, body = s.do(t, http.MethodPatch, "/api/event-types/arch.type", `{"status":"ARCHIVE"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "ARCHIVE", body["status"])
	resp, body = s.do(t, http.MethodPost, "/api/events", fmt.Sprintf(ev, "a2"), "Content-Type", ingest.ContentTypeStructured)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Equal(t, problem(422, "the event does not satisfy its event type", [2]string{"/type", "event type is ARCHIVE"}), body)
	_, list := s.do(t, http.MethodGet, "/api/event-types?status=ARCHIVE", nil)
	require.Len(t, list["items"], 1)

	resp, _ = s.do(t, http.MethodPatch, "/api/event-types/arch.type", `{"status":"CURRENT"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, body = s.do(t, http.MethodPost, "/api/events", fmt.Sprintf(ev, "a3"), "Content-Type", ingest.ContentTypeStructured)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", body)
}

// TestEventTypeDeleteWhileBound checks that a type bound by a subscription,
// exactly or through a pattern, cannot be deleted.
func TestEventTypeDeleteWhileBound(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	for _, tc := range []struct {
		code, binding string
		bound         bool
	}{
		{"del.exact.created", "del.exact.created", true},
		{"del.glob.created", "del.glob.*", true},
		{"del.inner.created", "del.*.created", true},
		{"del.free.created", "del.other.*", false},
	} {
		createType(t, s, tc.code)
		resp, sub := s.do(t, http.MethodPost, "/api/subscriptions", map[string]any{
			"code": "sub-" + tc.code, "eventTypes": []any{map[string]any{"eventTypeCode": tc.binding}}, "target": "http://127.0.0.1:9/hook",
		})
		require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", sub)
		resp, body := s.do(t, http.MethodDelete, "/api/event-types/"+tc.code, nil)
		if !tc.bound {
			require.Equal(t, http.StatusNoContent, resp.StatusCode, "%v", body)
			continue
		}
		require.Equal(t, http.StatusConflict, resp.StatusCode, "%s: %v", tc.code, body)
		require.Equal(t, problem(409, fmt.Sprintf("event type %q is bound by a subscription", tc.code)), body)
		resp, _ = s.do(t, http.MethodDelete, "/api/subscriptions/"+sub["id"].(string), nil)
		require.Equal(t, http.StatusNoContent, resp.StatusCode)
		resp, body = s.do(t, http.MethodDelete, "/api/event-types/"+tc.code, nil)
		require.Equal(t, http.StatusNoContent, resp.StatusCode, "%v", body)
		resp, _ = s.do(t, http.MethodGet, "/api/event-types/"+tc.code, nil)
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	}
}

// TestIngestSchemaViolations checks the exact problem+json of the common
// mistakes, pointer by pointer, in all three content modes.
func TestIngestSchemaViolations(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	createType(t, s, "shop.order.created", version("1.0", "CURRENT", orderSchema))
	const single = "the event does not satisfy its event type"
	const batch = "events of the batch do not satisfy their event types; nothing was stored"
	structured := func(data string) string {
		return `{"specversion":"1.0","id":"x","source":"/s","type":"shop.order.created","data":` + data + `}`
	}
	for _, tc := range []struct {
		name    string
		data    string
		wantErr [][2]string
	}{
		{"missing required", `{"amount":1}`, [][2]string{{"/data", "missing required property 'currency'"}}},
		{"wrong type", `{"amount":"12.50","currency":"EUR"}`, [][2]string{{"/data/amount", "got string, want number"}}},
		{"enum", `{"amount":1,"currency":"GBP"}`, [][2]string{{"/data/currency", "value must be one of 'EUR', 'USD'"}}},
		{"format", `{"amount":1,"currency":"EUR","email":"someone"}`, [][2]string{{"/data/email", "'someone' is not valid email: missing @"}}},
		{"additionalProperties", `{"amount":1,"currency":"EUR","note":"x"}`, [][2]string{{"/data/note", "property 'note' is not allowed (additionalProperties is false)"}}},
		{"nested", `{"amount":1,"currency":"EUR","lines":[{"sku":"A"},{"sku":5}]}`, [][2]string{{"/data/lines/1/sku", "got number, want string"}}},
		{"several at once", `{"currency":"GBP","note":1}`, [][2]string{
			{"/data", "missing required property 'amount'"},
			{"/data/currency", "value must be one of 'EUR', 'USD'"},
			{"/data/note", "property 'note' is not allowed (additionalProperties is false)"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp, body := s.do(t, http.MethodPost, "/api/events", structured(tc.data), "Content-Type", ingest.ContentTypeStructured)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
			require.Equal(t, api.ContentTypeProblem, resp.Header.Get("Content-Type"))
			require.Equal(t, problem(422, single, tc.wantErr...), body, "structured")

			resp, body = s.do(t, http.MethodPost, "/api/events", tc.data,
				"ce-specversion", "1.0", "ce-id", "b", "ce-source", "/s", "ce-type", "shop.order.created")
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
			require.Equal(t, problem(422, single, tc.wantErr...), body, "binary mode points as if structured")

			good := structured(`{"amount":1,"currency":"EUR"}`)
			resp, body = s.do(t, http.MethodPost, "/api/events", "["+good+","+good+","+good+","+structured(tc.data)+"]",
				"Content-Type", ingest.ContentTypeBatch)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
			prefixed := make([][2]string, len(tc.wantErr))
			for i, e := range tc.wantErr {
				prefixed[i] = [2]string{"/3" + e[0], e[1]}
			}
			require.Equal(t, problem(422, batch, prefixed...), body, "batch items are prefixed by index")
		})
	}
}

// TestIngestVersionChoice checks API.md §1 step 4 through HTTP, including
// the Deprecation header.
func TestIngestVersionChoice(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	createType(t, s, "pick.version",
		version("1.9", "CURRENT", `{"required":["v19"]}`),
		version("1.10", "CURRENT", `{"required":["v110"]}`),
		version("2.0", "FINALISING", `{"required":["v20"]}`),
		version("1.0", "CURRENT", `{"required":["v10"]}`),
	)
	resp, _ := s.do(t, http.MethodPatch, "/api/event-types/pick.version/versions/1.0", `{"status":"DEPRECATED"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	createType(t, s, "pick.none")
	createType(t, s, "pick.unfinished", version("1.0", "FINALISING", `{}`))

	n := 0
	for _, tc := range []struct {
		name, typ, dataversion, data string
		want                         int
		wantErr                      [2]string
		deprecated                   bool
	}{
		{name: "newest CURRENT by number", typ: "pick.version", data: `{"v110":1}`, want: 201},
		{name: "not 1.9", typ: "pick.version", data: `{"v19":1}`, want: 422, wantErr: [2]string{"/data", "missing required property 'v110'"}},
		{name: "named CURRENT", typ: "pick.version", dataversion: "1.9", data: `{"v19":1}`, want: 201},
		{name: "named FINALISING", typ: "pick.version", dataversion: "2.0", data: `{"v20":1}`, want: 201},
		{name: "named DEPRECATED", typ: "pick.version", dataversion: "1.0", data: `{"v10":1}`, want: 201, deprecated: true},
		{name: "unknown named", typ: "pick.version", dataversion: "3.0", data: `{}`, want: 422, wantErr: [2]string{"/dataversion", `unknown schema version "3.0"`}},
		{name: "no versions takes anything", typ: "pick.none", data: `[true]`, want: 201},
		{name: "only FINALISING needs dataversion", typ: "pick.unfinished", data: `{}`, want: 422, wantErr: [2]string{"/dataversion", "is required: the type has no CURRENT version"}},
		{name: "only FINALISING named", typ: "pick.unfinished", dataversion: "1.0", data: `{}`, want: 201},
	} {
		n++
		ext := ""
		if tc.dataversion != "" {
			ext = fmt.Sprintf(`,"dataversion":%q`, tc.dataversion)
		}
		ev := fmt.Sprintf(`{"specversion":"1.0","id":"e%d","source":"/s","type":%q%s,"data":%s}`, n, tc.typ, ext, tc.data)
		resp, body := s.do(t, http.MethodPost, "/api/events", ev, "Content-Type", ingest.ContentTypeStructured)
		require.Equal(t, tc.want, resp.StatusCode, "%s: %v", tc.name, body)
		if tc.deprecated {
			require.Equal(t, "true", resp.Header.Get("Deprecation"), tc.name)
		} else {
			require.Empty(t, resp.Header.Values("Deprecation"), tc.name)
		}
		if tc.want == 422 {
			require.Equal(t, []any{map[string]any{"pointer": tc.wantErr[0], "message": tc.wantErr[1]}}, body["errors"], tc.name)
		}
	}
}

func TestIngestUnknownTypes(t *testing.T) {
	t.Parallel()
	ev := `{"specversion":"1.0","id":"u1","source":"/s","type":"not.registered","data":{"x":1}}`

	strict := newTestServer(t, nil)
	resp, body := strict.do(t, http.MethodPost, "/api/events", ev, "Content-Type", ingest.ContentTypeStructured)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Equal(t, problem(422, "the event does not satisfy its event type", [2]string{"/type", "is not a registered event type"}), body)

	lenient := newTestServer(t, func(c *serverConfig) {
		reg := schema.NewRegistry(schema.RegistryConfig{Store: c.DB, AllowUnknownTypes: true})
		c.Registry = reg
		c.Ingest = ingest.New(ingest.Config{Store: c.DB, Validator: reg, Matcher: c.Subscriptions, Jobs: c.Jobs.(ingest.Jobs), IDs: c.IDs})
	})
	resp, body = lenient.do(t, http.MethodPost, "/api/events", ev, "Content-Type", ingest.ContentTypeStructured)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", body)
	// Registered types keep their schemas.
	createType(t, lenient, "known.type", version("1.0", "CURRENT", `{"type":"object","required":["a"]}`))
	resp, body = lenient.do(t, http.MethodPost, "/api/events", `{"specversion":"1.0","id":"u2","source":"/s","type":"known.type","data":{}}`, "Content-Type", ingest.ContentTypeStructured)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Equal(t, problem(422, "the event does not satisfy its event type", [2]string{"/data", "missing required property 'a'"}), body)
}
