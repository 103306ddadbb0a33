package main

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go" //nolint:depguard // the test reads back, from an in-process broker, what the gateway published
	"github.com/stretchr/testify/require"
)

// TestDestinationFormInChromium: the subscription form's delivery picker
// shows exactly a type's fields; a nats destination with a token (an
// in-process nats-server with JetStream that requires it) is created
// through the form, listed with its badge and masked targetUrl and by
// ?destinationType=, edited keeping the token (the form sends "***"; the
// next delivery still authenticates, so the stored token is the one given
// at creation), and a moved broker address without the token gets the
// API's 422 next to the token's field. The job view shows the broker's
// acknowledgement; a kafka destination with SASL and TLS is created with
// its nested fields, its SASL password shown "***" (api/ui/e2e/destination.mjs).
func TestDestinationFormInChromium(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	dir := e2eDir(t)
	shots := screenshotDir(t)

	const token = "ui-nats-token-s3cret"
	ns := newNATS(t, token)
	nc, err := natsgo.Connect(ns.ClientURL(), natsgo.Token(token), natsgo.Timeout(5*time.Second))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	natsStream(t, nc, "orders.>")
	inbox, err := nc.SubscribeSync("orders.>")
	require.NoError(t, err)
	require.NoError(t, nc.Flush())

	gw := startGateway(t, map[string]string{"HOOKLANE_API_KEYS": "ops:admin:" + uiKeys["admin"]})
	admin := map[string]string{"Authorization": "Bearer " + uiKeys["admin"]}
	for _, code := range []string{"ui.dest.order.created", "ui.dest.unposted"} {
		status, _, out := gw.do(t, http.MethodPost, "/api/event-types", "application/json", `{"code":"`+code+`","name":"`+code+`"}`, admin)
		require.Equal(t, http.StatusCreated, status, "%v", out)
	}
	// A webhook beside it, of a type nothing posts: the list's other kind.
	status, _, out := gw.do(t, http.MethodPost, "/api/subscriptions", "application/json",
		`{"code":"ui-dest-hook","eventTypes":[{"eventTypeCode":"ui.dest.unposted"}],"target":"http://127.0.0.1:9/hooks"}`, admin)
	require.Equal(t, http.StatusCreated, status, "%v", out)

	runScenario(t, dir, "destination", map[string]string{
		"CHROMIUM_PATH": chromium, "HOOKLANE_UI_BASE": gw.base, "HOOKLANE_UI_ADMIN_KEY": uiKeys["admin"],
		"HOOKLANE_UI_NATS_URL": ns.ClientURL(), "HOOKLANE_UI_NATS_MOVED_URL": "nats://127.0.0.2:4222",
		"HOOKLANE_UI_NATS_TOKEN": token, "HOOKLANE_UI_DEST_TYPE": "ui.dest.order.created",
		"HOOKLANE_UI_SCREENSHOT": filepath.Join(shots, "ui-destination.png"),
	})

	// The one event of the scenario, published after the edit to the
	// edited subject, with the token given at creation (the server
	// refuses any other).
	msg, err := inbox.NextMsg(30 * time.Second)
	require.NoError(t, err)
	require.Equal(t, "orders.edited", msg.Subject)
	require.Equal(t, "1", msg.Header.Get("hooklane-attempt"))
	require.NotEmpty(t, msg.Header.Get("Nats-Msg-Id"))

	status, _, page := gw.do(t, http.MethodGet, "/api/subscriptions?destinationType=nats", "", "", admin)
	require.Equal(t, http.StatusOK, status, "%v", page)
	items := page["items"].([]any)
	require.Len(t, items, 1)
	d := items[0].(map[string]any)["destination"].(map[string]any)
	require.Equal(t, ns.ClientURL(), d["url"], "the refused PATCH left the url")
	require.Equal(t, "***", d["token"])
	require.Equal(t, "orders.edited", d["subject"])
}
