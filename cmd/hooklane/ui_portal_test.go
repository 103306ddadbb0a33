package main

import (
	"net/http"
	"path/filepath"
	"testing"
)

// TestUIPortalInChromium drives the dashboard's portal mode (API.md §11)
// in headless Chromium: a client's admin token sees only its client,
// branded with its name; a viewer token cannot write; a revoked token is
// asked for again.
func TestUIPortalInChromium(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	dir := e2eDir(t)
	shots := screenshotDir(t)
	gw := startGateway(t, map[string]string{"HOOKLANE_API_KEYS": "ops:admin:" + uiKeys["admin"]})
	admin := map[string]string{"Authorization": "Bearer " + uiKeys["admin"]}
	post := func(path, body string) map[string]any {
		status, _, out := gw.do(t, http.MethodPost, path, "application/json", body, admin)
		if status != http.StatusCreated {
			t.Fatalf("POST %s: %d %v", path, status, out)
		}
		return out
	}
	post("/api/event-types", `{"code":"portal.order.created","name":"Order created"}`)
	post("/api/clients", `{"id":"acme","name":"ACME Corp"}`)
	post("/api/clients", `{"id":"globex","name":"Globex"}`)
	post("/api/subscriptions", `{"code":"acme-orders","clientId":"acme","eventTypes":[{"eventTypeCode":"portal.order.created"}],"target":"http://127.0.0.1:9/acme"}`)
	post("/api/subscriptions", `{"code":"globex-orders","clientId":"globex","eventTypes":[{"eventTypeCode":"portal.order.created"}],"target":"http://127.0.0.1:9/globex"}`)
	post("/api/subscriptions", `{"code":"platform-audit","eventTypes":[{"eventTypeCode":"portal.order.created"}],"target":"http://127.0.0.1:9/platform"}`)
	for _, c := range []string{"acme", "globex"} {
		status, _, out := gw.do(t, http.MethodPost, "/api/events", "application/cloudevents+json",
			`{"specversion":"1.0","id":"p-`+c+`","source":"/portal","type":"portal.order.created","clientid":"`+c+`","data":{}}`, admin)
		if status != http.StatusCreated {
			t.Fatalf("post event of %s: %d %v", c, status, out)
		}
	}
	adminTok := post("/api/clients/acme/tokens", `{"role":"admin","name":"portal"}`)
	viewerTok := post("/api/clients/acme/tokens", `{"role":"viewer"}`)
	revokeTok := post("/api/clients/acme/tokens", `{"role":"viewer"}`)
	runScenario(t, dir, "portal", map[string]string{
		"CHROMIUM_PATH": chromium, "HOOKLANE_UI_BASE": gw.base, "HOOKLANE_UI_SCREENSHOT": filepath.Join(shots, "ui-portal.png"),
		"HOOKLANE_UI_CLIENT_ID": "acme", "HOOKLANE_UI_CLIENT_NAME": "ACME Corp",
		"HOOKLANE_UI_OWN_SUB": "acme-orders", "HOOKLANE_UI_OTHER_SUBS": "globex-orders,platform-audit",
		"HOOKLANE_UI_ADMIN_TOKEN": adminTok["token"].(string), "HOOKLANE_UI_VIEWER_TOKEN": viewerTok["token"].(string),
		"HOOKLANE_UI_REVOKE_TOKEN": revokeTok["token"].(string), "HOOKLANE_UI_REVOKE_TOKEN_ID": revokeTok["id"].(string),
		"HOOKLANE_UI_ADMIN_KEY": uiKeys["admin"], "HOOKLANE_UI_TYPE": "portal.order.created", "HOOKLANE_UI_TARGET": "http://127.0.0.1:9/portal",
	})
}
