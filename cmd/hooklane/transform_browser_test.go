package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTransformationEditorInChromium: on a subscription's page the
// transformation editor is prefilled with the latest matching event, tests
// typed code (the transformed request shown), shows a throwing handler's
// error at its line, and saves the code; the next event is then delivered
// as the saved code shapes it.
func TestTransformationEditorInChromium(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	dir := e2eDir(t)
	shots := screenshotDir(t)
	recv := newShapeReceiver(t)
	gw := startGateway(t, map[string]string{"HOOKLANE_API_KEYS": "ops:admin:" + uiKeys["admin"]})
	admin := map[string]string{"Authorization": "Bearer " + uiKeys["admin"]}
	status, _, out := gw.do(t, http.MethodPost, "/api/event-types", "application/json", `{"code":"ui.tx.order.created","name":"Order created"}`, admin)
	require.Equal(t, http.StatusCreated, status, "%v", out)
	status, _, sub := gw.do(t, http.MethodPost, "/api/subscriptions", "application/json",
		`{"code":"tx-partner","eventTypes":[{"eventTypeCode":"ui.tx.order.created"}],"target":"`+recv.srv.URL+`/orders"}`, admin)
	require.Equal(t, http.StatusCreated, status, "%v", sub)
	runScenario(t, dir, "transformation", map[string]string{
		"CHROMIUM_PATH": chromium, "HOOKLANE_UI_BASE": gw.base, "HOOKLANE_UI_ADMIN_KEY": uiKeys["admin"],
		"HOOKLANE_UI_TX_TYPE": "ui.tx.order.created", "HOOKLANE_UI_TX_SUB_ID": sub["id"].(string),
		"HOOKLANE_UI_SCREENSHOT": filepath.Join(shots, "ui-transformation.png"),
	})
	require.Len(t, recv.wait(t, 2), 2, "the scenario's two events, before the save")

	status, _, _ = gw.do(t, http.MethodPost, "/api/events", "application/cloudevents+json",
		`{"specversion":"1.0","id":"after-save","source":"/shop","type":"ui.tx.order.created","data":{"orderId":"o-9","total":9}}`, admin)
	require.Equal(t, http.StatusCreated, status)
	r := recv.wait(t, 1)[0]
	require.Equal(t, http.MethodPut, r.method)
	require.Equal(t, "/orders/o-9", r.path)
	var body map[string]any
	require.NoError(t, json.Unmarshal(r.body, &body))
	require.Equal(t, map[string]any{"order_id": "o-9", "amount": float64(9)}, body, "the saved code shapes the delivery")
}
