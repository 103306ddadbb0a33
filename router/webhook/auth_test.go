package webhook_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/destination/endpoint/endpointtest"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/clocktest"
	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/router/webhook"
	"github.com/hooklane/hooklane/subscription"
)

// authReceiver is a loopback receiver that accepts a delivery only with the
// Authorization header acceptFunc approves (401 otherwise), and counts
// what it saw.
type authReceiver struct {
	srv        *httptest.Server
	mu         sync.Mutex
	seen       []string
	acceptFunc func(authorization string) bool
}

func newAuthReceiver(t *testing.T, accept func(string) bool) *authReceiver {
	t.Helper()
	r := &authReceiver{acceptFunc: accept}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *authReceiver) serve(w http.ResponseWriter, req *http.Request) {
	h := req.Header.Get("Authorization")
	r.mu.Lock()
	r.seen = append(r.seen, h)
	accept := r.acceptFunc
	r.mu.Unlock()
	if !accept(h) {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *authReceiver) setAccept(f func(string) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acceptFunc = f
}

func (r *authReceiver) authorizations() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// tokenServer is an OAuth 2.0 token endpoint on 127.0.0.1 for the client
// credentials grant: it checks the client's credentials and parameters,
// counts requests and issues "token-<n>" living expiresIn seconds.
type tokenServer struct {
	srv       *httptest.Server
	requests  atomic.Int32
	expiresIn atomic.Int32
	fail      atomic.Bool
	mu        sync.Mutex
	lastForm  map[string][]string
}

const (
	tokenClientID     = "hooklane-gw"
	tokenClientSecret = "oauth-client-secret-value"
)

func newTokenServer(t *testing.T, tlsFunc func(http.Handler) *httptest.Server) *tokenServer {
	t.Helper()
	ts := &tokenServer{}
	ts.expiresIn.Store(3600)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := ts.requests.Add(1)
		if ts.fail.Load() {
			http.Error(w, `{"error":"temporarily_unavailable"}`, http.StatusServiceUnavailable)
			return
		}
		id, secret, ok := r.BasicAuth()
		if err := r.ParseForm(); err != nil || !ok || id != tokenClientID || secret != tokenClientSecret ||
			r.PostForm.Get("grant_type") != "client_credentials" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"invalid_client","error_description":"echo ` + secret + `"}`))
			return
		}
		ts.mu.Lock()
		ts.lastForm = r.PostForm
		ts.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{ //nolint:errchkjson // strings and numbers always encode
			"access_token": fmt.Sprintf("token-%d", n), "token_type": "Bearer", "expires_in": ts.expiresIn.Load(),
		})
	})
	if tlsFunc != nil {
		ts.srv = tlsFunc(h)
	} else {
		ts.srv = httptest.NewServer(h)
		t.Cleanup(ts.srv.Close)
	}
	return ts
}

func (ts *tokenServer) form() map[string][]string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.lastForm
}

func (ts *tokenServer) auth() *endpoint.Auth {
	return &endpoint.Auth{
		Type: endpoint.AuthOAuth2, TokenURL: ts.srv.URL + "/oauth/token", ClientID: tokenClientID,
		ClientSecret: tokenClientSecret, Scopes: []string{"hooks:write", "hooks:read"}, Audience: "https://receiver.example",
	}
}

// subDelivery is an EVENT delivery to target for subscription sub-1 with
// auth and tls.
func subDelivery(target string, auth *endpoint.Auth, tls *endpoint.TLS) *router.Delivery {
	j := eventJob()
	j.TargetURL = target
	return &router.Delivery{Job: j, Event: storedEvent(), Attempt: 1, Subscription: &subscription.Subscription{
		ID: "sub-1", Code: "order-processor", Secrets: []subscription.Secret{{Value: subscription.NewSecret()}}, Auth: auth, TLS: tls,
	}}
}

type authBundle struct {
	clock *clocktest.Clock
	hooks *webhook.Transport
}

func setupAuth(t *testing.T, allowPrivate bool) *authBundle {
	t.Helper()
	clock := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	hooks := webhook.New(webhook.Config{AllowPrivateTargets: allowPrivate, UserAgent: "hooklane/test", NowFunc: clock.Now})
	t.Cleanup(hooks.Close)
	return &authBundle{clock: clock, hooks: hooks}
}

func TestDeliverBearerAndBasic(t *testing.T) {
	t.Parallel()
	b := setupAuth(t, true)
	tests := []struct {
		name string
		auth *endpoint.Auth
		want string
	}{
		{"bearer", &endpoint.Auth{Type: endpoint.AuthBearer, Token: "bearer-token-1"}, "Bearer bearer-token-1"},
		{"basic", &endpoint.Auth{Type: endpoint.AuthBasic, Username: "Aladdin", Password: "open sesame"}, "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rcv := newAuthReceiver(t, func(h string) bool { return h == tt.want })
			out := b.hooks.Deliver(t.Context(), subDelivery(rcv.srv.URL, tt.auth, nil))
			require.NoError(t, out.Err)
			require.Equal(t, http.StatusNoContent, out.Attempt.StatusCode)

			// A wrong credential is refused: a 401 without OAuth 2.0 ends
			// the job (API.md §6).
			wrong := tt.auth.Clone()
			wrong.Token, wrong.Password = wrong.Token+"x", wrong.Password+"x"
			out = b.hooks.Deliver(t.Context(), subDelivery(rcv.srv.URL, wrong, nil))
			require.True(t, dispatch.IsPermanent(out.Err), "%v", out.Err)
			require.Equal(t, http.StatusUnauthorized, out.Attempt.StatusCode)
		})
	}
}

func TestDeliverTaskJobAuth(t *testing.T) {
	t.Parallel()
	b := setupAuth(t, true)
	rcv := newAuthReceiver(t, func(h string) bool { return h == "Bearer task-token" })
	j := &dispatch.Job{
		ID: "01TASK", Kind: dispatch.KindTask, TargetURL: rcv.srv.URL, TimeoutSeconds: 5, Payload: []byte(`{}`),
		Secret: subscription.NewSecret(), Auth: &endpoint.Auth{Type: endpoint.AuthBearer, Token: "task-token"},
	}
	out := b.hooks.Deliver(t.Context(), &router.Delivery{Job: j, Attempt: 1})
	require.NoError(t, out.Err)
}

// TestOAuth2TokenReusedUntilExpiry: one token serves many deliveries
// (concurrent ones too) until 10 s before it expires; then one new token
// is requested.
func TestOAuth2TokenReusedUntilExpiry(t *testing.T) {
	t.Parallel()
	b := setupAuth(t, true)
	ts := newTokenServer(t, nil)
	var want atomic.Value
	want.Store("Bearer token-1")
	rcv := newAuthReceiver(t, func(h string) bool { return h == want.Load().(string) })
	auth := ts.auth()

	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			out := b.hooks.Deliver(t.Context(), subDelivery(rcv.srv.URL, auth, nil))
			require.NoError(t, out.Err)
		})
	}
	wg.Wait()
	require.Equal(t, int32(1), ts.requests.Load(), "concurrent deliveries share one token request")
	require.Equal(t, []string{"client_credentials"}, ts.form()["grant_type"])
	require.Equal(t, []string{"hooks:write hooks:read"}, ts.form()["scope"])
	require.Equal(t, []string{"https://receiver.example"}, ts.form()["audience"])

	b.clock.Advance(time.Hour - 11*time.Second)
	require.NoError(t, b.hooks.Deliver(t.Context(), subDelivery(rcv.srv.URL, auth, nil)).Err)
	require.Equal(t, int32(1), ts.requests.Load(), "still 11 s before expiry")

	b.clock.Advance(2 * time.Second)
	want.Store("Bearer token-2")
	require.NoError(t, b.hooks.Deliver(t.Context(), subDelivery(rcv.srv.URL, auth, nil)).Err)
	require.Equal(t, int32(2), ts.requests.Load(), "renewed 10 s before expiry")
	for range 5 {
		require.NoError(t, b.hooks.Deliver(t.Context(), subDelivery(rcv.srv.URL, auth, nil)).Err)
	}
	require.Equal(t, int32(2), ts.requests.Load())

	// A changed configuration (a PATCH: another scope) gets its own token.
	changed := auth.Clone()
	changed.Scopes = []string{"other"}
	want.Store("Bearer token-3")
	require.NoError(t, b.hooks.Deliver(t.Context(), subDelivery(rcv.srv.URL, changed, nil)).Err)
	require.Equal(t, int32(3), ts.requests.Load())
}

// TestOAuth2ShortLivedToken: a token living under 20 s is renewed after
// half its lifetime.
func TestOAuth2ShortLivedToken(t *testing.T) {
	t.Parallel()
	b := setupAuth(t, true)
	ts := newTokenServer(t, nil)
	ts.expiresIn.Store(16)
	rcv := newAuthReceiver(t, func(h string) bool { return strings.HasPrefix(h, "Bearer token-") })
	auth := ts.auth()
	require.NoError(t, b.hooks.Deliver(t.Context(), subDelivery(rcv.srv.URL, auth, nil)).Err)
	b.clock.Advance(7 * time.Second) // before half of 16 s (the real clock moved a little too)
	require.NoError(t, b.hooks.Deliver(t.Context(), subDelivery(rcv.srv.URL, auth, nil)).Err)
	require.Equal(t, int32(1), ts.requests.Load())
	b.clock.Advance(2 * time.Second) // past half
	require.NoError(t, b.hooks.Deliver(t.Context(), subDelivery(rcv.srv.URL, auth, nil)).Err)
	require.Equal(t, int32(2), ts.requests.Load())
	require.Equal(t, []string{"Bearer token-1", "Bearer token-1", "Bearer token-2"}, rcv.authorizations())
}

// TestOAuth2UnauthorizedDropsToken: a 401 from the target is a retryable
// failure (not the permanent 4xx of API.md §6) and drops the token; the
// next delivery gets a new one.
func TestOAuth2UnauthorizedDropsToken(t *testing.T) {
	t.Parallel()
	b := setupAuth(t, true)
	ts := newTokenServer(t, nil)
	rcv := newAuthReceiver(t, func(h string) bool { return h == "Bearer token-1" })
	auth := ts.auth()
	require.NoError(t, b.hooks.Deliver(t.Context(), subDelivery(rcv.srv.URL, auth, nil)).Err)

	rcv.setAccept(func(h string) bool { return h == "Bearer token-2" }) // the receiver revoked token-1
	out := b.hooks.Deliver(t.Context(), subDelivery(rcv.srv.URL, auth, nil))
	require.Error(t, out.Err)
	require.False(t, dispatch.IsPermanent(out.Err), "a 401 of an oauth2 target is retried")
	require.True(t, out.Attempted)
	require.Equal(t, http.StatusUnauthorized, out.Attempt.StatusCode)
	var se *webhook.StatusError
	require.ErrorAs(t, out.Err, &se)

	require.NoError(t, b.hooks.Deliver(t.Context(), subDelivery(rcv.srv.URL, auth, nil)).Err)
	require.Equal(t, int32(2), ts.requests.Load(), "the retry got a new token")
	require.Equal(t, []string{"Bearer token-1", "Bearer token-1", "Bearer token-2"}, rcv.authorizations())
}

// TestOAuth2TokenEndpointFailure: a failing token endpoint is a retryable
// failed attempt, with nothing sent to the target and no secret in the
// error; a refused client too.
func TestOAuth2TokenEndpointFailure(t *testing.T) {
	t.Parallel()
	b := setupAuth(t, true)
	ts := newTokenServer(t, nil)
	rcv := newAuthReceiver(t, func(string) bool { return true })

	ts.fail.Store(true)
	out := b.hooks.Deliver(t.Context(), subDelivery(rcv.srv.URL, ts.auth(), nil))
	require.Error(t, out.Err)
	require.False(t, dispatch.IsPermanent(out.Err))
	require.True(t, out.Attempted, "a failed attempt is recorded")
	require.Contains(t, out.Err.Error(), "answered 503")
	require.Empty(t, rcv.authorizations(), "nothing sent to the target")

	ts.fail.Store(false)
	wrong := ts.auth()
	wrong.ClientSecret = "wrong-client-secret"
	out = b.hooks.Deliver(t.Context(), subDelivery(rcv.srv.URL, wrong, nil))
	require.False(t, dispatch.IsPermanent(out.Err))
	require.Contains(t, out.Err.Error(), "answered 401 Unauthorized (invalid_client)")
	require.NotContains(t, out.Err.Error(), "wrong-client-secret", "the endpoint's echo is not kept")

	require.NoError(t, b.hooks.Deliver(t.Context(), subDelivery(rcv.srv.URL, ts.auth(), nil)).Err)
}

// TestOAuth2TokenEndpointSSRF: the token endpoint is dialled through the
// same guard as targets: a private one is refused at connect time, a
// permanent failure, and never reached.
func TestOAuth2TokenEndpointSSRF(t *testing.T) {
	t.Parallel()
	b := setupAuth(t, false)
	ts := newTokenServer(t, nil)
	out := b.hooks.Deliver(t.Context(), subDelivery("http://8.8.8.8/hook", ts.auth(), nil))
	require.ErrorIs(t, out.Err, webhook.ErrPrivateTarget)
	require.True(t, dispatch.IsPermanent(out.Err))
	require.Zero(t, ts.requests.Load())
}

// TestMutualTLS: a receiver that requires a client certificate accepts the
// subscription's, over one reused connection, and refuses a delivery
// without it.
func TestMutualTLS(t *testing.T) {
	t.Parallel()
	b := setupAuth(t, true)
	pki := endpointtest.NewPKI(t)
	var conns atomic.Int32
	var peer atomic.Value
	srv := pki.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peer.Store(r.TLS.PeerCertificates[0].Subject.CommonName)
		w.WriteHeader(http.StatusOK)
	}), true, func(hs *http.Server) {
		hs.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
	})

	for range 3 {
		out := b.hooks.Deliver(t.Context(), subDelivery(srv.URL, nil, pki.ClientTLS()))
		require.NoError(t, out.Err)
	}
	require.Equal(t, "hooklane test client", peer.Load())
	require.Equal(t, int32(1), conns.Load(), "the connection is reused")

	// The CA alone: the server is trusted, but it wants a certificate.
	out := b.hooks.Deliver(t.Context(), subDelivery(srv.URL, nil, &endpoint.TLS{CACertificate: pki.CACertificate}))
	require.Error(t, out.Err)
	require.False(t, dispatch.IsPermanent(out.Err), "a handshake failure is retried")
	// Neither: the private CA is unknown to the system roots.
	out = b.hooks.Deliver(t.Context(), subDelivery(srv.URL, nil, nil))
	require.ErrorContains(t, out.Err, "certificate")

	// A certificate of another CA is refused by the receiver.
	other := endpointtest.NewPKI(t)
	foreign := &endpoint.TLS{ClientCertificate: other.ClientCertificate, ClientKey: other.ClientKey, CACertificate: pki.CACertificate}
	require.Error(t, b.hooks.Deliver(t.Context(), subDelivery(srv.URL, nil, foreign)).Err)
}

// TestOAuth2OverPrivateCA: the tls CA applies to the token endpoint too.
func TestOAuth2OverPrivateCA(t *testing.T) {
	t.Parallel()
	b := setupAuth(t, true)
	pki := endpointtest.NewPKI(t)
	ts := newTokenServer(t, func(h http.Handler) *httptest.Server { return pki.NewServer(t, h, false) })
	var got atomic.Value
	srv := pki.NewServer(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("Authorization"))
	}), true)
	out := b.hooks.Deliver(t.Context(), subDelivery(srv.URL, ts.auth(), pki.ClientTLS()))
	require.NoError(t, out.Err)
	require.Equal(t, "Bearer token-1", got.Load())

	// Without the CA the token endpoint's certificate is not trusted.
	out = b.hooks.Deliver(t.Context(), subDelivery(srv.URL, ts.auth(), nil))
	require.ErrorContains(t, out.Err, "oauth2 token")
	require.False(t, dispatch.IsPermanent(out.Err))
}
