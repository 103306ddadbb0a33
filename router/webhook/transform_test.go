package webhook_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/router/webhook"
	"github.com/hooklane/hooklane/subscription"
	"github.com/hooklane/hooklane/subscription/transform"
)

// received is one request a receiver got.
type received struct {
	method, path string
	header       http.Header
	body         []byte
}

// receiver is an httptest server on 127.0.0.1 that records what it gets.
type receiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []received
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	rc := &receiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), body: body})
		rc.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// transformFixture is a transport with an engine, a receiver, and the
// delivery of the stored event to it for a subscription running code.
type transformFixture struct {
	hooks  *webhook.Transport
	rc     *receiver
	secret string
}

func newTransformFixture(t *testing.T) *transformFixture {
	t.Helper()
	hooks := webhook.New(webhook.Config{
		AllowPrivateTargets: true, UserAgent: "hooklane/test",
		Transform: transform.New(transform.Config{Timeout: 2 * time.Second}),
	})
	t.Cleanup(hooks.Close)
	return &transformFixture{hooks: hooks, rc: newReceiver(t), secret: subscription.NewSecret()}
}

func (f *transformFixture) delivery(code string) *router.Delivery {
	j := eventJob()
	j.TargetURL = f.rc.srv.URL + "/hook"
	j.Headers = map[string]string{"X-Tenant": "acme", "X-Drop": "1"}
	return &router.Delivery{
		Job: j, Event: storedEvent(), Attempt: 2,
		Subscription: &subscription.Subscription{
			ID: "sub-1", Version: 1, Secrets: []subscription.Secret{{Value: f.secret}},
			Transformation: &subscription.Transformation{Code: code},
		},
	}
}

// A handler that renames the payload's members and drops a header: the
// receiver gets the new body as JSON with a signature over it, the custom
// headers the handler kept, and none it deleted; the handler saw §16's
// input.
func TestTransformRenamesPayloadSignedOverNewBody(t *testing.T) {
	t.Parallel()
	f := newTransformFixture(t)
	out := f.hooks.Deliver(t.Context(), f.delivery(`function handler(w) {
  w.payload = {amount: w.payload.data.total, kind: w.eventType, event: w.eventId,
    attempt: w.attempt, method: w.method, tenant: w.headers["x-tenant"], cancel: w.cancel};
  delete w.headers["x-drop"];
  return w;
}`))
	require.NoError(t, out.Err)
	require.True(t, out.Attempted)
	got := f.rc.requests()
	require.Len(t, got, 1)
	r := got[0]
	require.Equal(t, http.MethodPost, r.method)
	require.Equal(t, "/hook", r.path)
	require.JSONEq(t, `{"amount":12,"kind":"shop:order:created","event":"01EVT","attempt":2,"method":"POST",
		"tenant":"acme","cancel":false}`, string(r.body))
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	require.Equal(t, "acme", r.header.Get("X-Tenant"))
	require.Empty(t, r.header.Get("X-Drop"), "a header deleted from the object is not sent")
	wh, err := standardwebhooks.NewWebhook(f.secret)
	require.NoError(t, err)
	require.NoError(t, wh.Verify(r.body, r.header), "the signature covers the transformed body")
}

// A handler that PUTs to a path bearing the event's id; a string payload
// is sent as text, and a content-type the handler sets wins.
func TestTransformPutToIDPath(t *testing.T) {
	t.Parallel()
	f := newTransformFixture(t)
	out := f.hooks.Deliver(t.Context(), f.delivery(`function handler(w) {
  w.method = "PUT";
  w.url = w.url + "/" + w.payload.id;
  w.payload = "total=" + w.payload.data.total;
  w.headers["content-type"] = "application/x-www-form-urlencoded";
  return w;
}`))
	require.NoError(t, out.Err)
	got := f.rc.requests()
	require.Len(t, got, 1)
	require.Equal(t, http.MethodPut, got[0].method)
	require.Equal(t, "/hook/evt-1", got[0].path)
	require.Equal(t, "total=12", string(got[0].body))
	require.Equal(t, "application/x-www-form-urlencoded", got[0].header.Get("Content-Type"))
	wh, err := standardwebhooks.NewWebhook(f.secret)
	require.NoError(t, err)
	require.NoError(t, wh.Verify(got[0].body, got[0].header))
}

// A handler that throws: nothing is sent, and the attempt fails for good
// (Permanent: no retry, not counted toward the circuit) with the error, its
// line and column as the job's lastError.
func TestTransformThrowIsPermanentWithPosition(t *testing.T) {
	t.Parallel()
	f := newTransformFixture(t)
	out := f.hooks.Deliver(t.Context(), f.delivery(`function handler(w) {
  var total = w.payload.data.total;
  throw new Error("no total " + total);
}`))
	require.Error(t, out.Err)
	require.True(t, dispatch.IsPermanent(out.Err))
	require.True(t, out.Attempted, "a failed attempt")
	require.Empty(t, out.Cancelled)
	require.Contains(t, out.Err.Error(), "transformation: line 3, column ")
	require.Contains(t, out.Err.Error(), "no total 12")
	require.Empty(t, f.rc.requests(), "nothing is sent")
}

// cancel: true sends nothing and cancels the job, uncounted.
func TestTransformCancel(t *testing.T) {
	t.Parallel()
	f := newTransformFixture(t)
	out := f.hooks.Deliver(t.Context(), f.delivery(`function handler(w) { w.cancel = w.eventType === "shop:order:created"; return w; }`))
	require.Equal(t, webhook.CancelledByTransformation, out.Cancelled)
	require.False(t, out.Attempted)
	require.NoError(t, out.Err)
	require.Empty(t, f.rc.requests())
}

// A global one delivery's run sets is not seen by the next.
func TestTransformGlobalsDoNotLeak(t *testing.T) {
	t.Parallel()
	f := newTransformFixture(t)
	code := `function handler(w) {
  var seen = typeof leaked !== "undefined";
  leaked = 1;
  w.payload = {seen: seen};
  return w;
}`
	for range 3 {
		require.NoError(t, f.hooks.Deliver(t.Context(), f.delivery(code)).Err)
	}
	got := f.rc.requests()
	require.Len(t, got, 3)
	for _, r := range got {
		require.JSONEq(t, `{"seen":false}`, string(r.body))
	}
}

// With auth, a url on another host (or port) is an invalid result: nothing
// is sent, the attempt fails for good; a path change is allowed.
func TestTransformAuthKeepsOrigin(t *testing.T) {
	t.Parallel()
	f := newTransformFixture(t)
	d := f.delivery(`function handler(w) { w.url = "http://127.0.0.1:9/elsewhere"; return w; }`)
	d.Subscription.Auth = &endpoint.Auth{Type: endpoint.AuthBearer, Token: "s3cret"}
	out := f.hooks.Deliver(t.Context(), d)
	require.True(t, dispatch.IsPermanent(out.Err))
	require.Contains(t, out.Err.Error(), "only the path and query may change")
	require.Empty(t, f.rc.requests())

	d = f.delivery(`function handler(w) { w.url = w.url + "/v2?x=1"; return w; }`)
	d.Subscription.Auth = &endpoint.Auth{Type: endpoint.AuthBearer, Token: "s3cret"}
	require.NoError(t, f.hooks.Deliver(t.Context(), d).Err)
	got := f.rc.requests()
	require.Len(t, got, 1)
	require.Equal(t, "/hook/v2", got[0].path)
	require.Equal(t, "Bearer s3cret", got[0].header.Get("Authorization"))
}

// TASK jobs, disabled transformations and a transport without an engine
// send §6's request untouched.
func TestTransformNotApplied(t *testing.T) {
	t.Parallel()
	f := newTransformFixture(t)
	const code = `function handler(w) { w.payload = "changed"; return w; }`

	off := false
	d := f.delivery(code)
	d.Subscription.Transformation.Enabled = &off
	require.NoError(t, f.hooks.Deliver(t.Context(), d).Err)

	plain := webhook.New(webhook.Config{AllowPrivateTargets: true, UserAgent: "hooklane/test"})
	t.Cleanup(plain.Close)
	require.NoError(t, plain.Deliver(t.Context(), f.delivery(code)).Err)

	task := &dispatch.Job{
		ID: "01TASK", Kind: dispatch.KindTask, TargetURL: f.rc.srv.URL + "/task", TimeoutSeconds: 5,
		Payload: []byte(`{"a":1}`), Secret: f.secret,
	}
	require.NoError(t, f.hooks.Deliver(t.Context(), &router.Delivery{Job: task, Attempt: 1}).Err)

	got := f.rc.requests()
	require.Len(t, got, 3)
	for _, r := range got[:2] {
		require.Equal(t, "application/cloudevents+json", r.header.Get("Content-Type"))
		require.Contains(t, string(r.body), `"id":"evt-1"`)
	}
	require.JSONEq(t, `{"a":1}`, string(got[2].body))
}
