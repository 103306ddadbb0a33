package webhook

import (
	"context"
	"net/http"

	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/router"
)

// endpointConfig is how one delivery authenticates (API.md §14): the
// subscription's auth and tls for an EVENT job, the job's own for a TASK
// job.
type endpointConfig struct {
	auth *endpoint.Auth
	tls  *endpoint.TLS
	// tokenKey keys the OAuth 2.0 token of auth (tokens).
	tokenKey string
}

func endpointOf(d *router.Delivery) endpointConfig {
	var ep endpointConfig
	scope := ""
	if d.Subscription != nil {
		ep.auth, ep.tls, scope = d.Subscription.Auth, d.Subscription.TLS, d.Subscription.ID
	} else {
		ep.auth, ep.tls = d.Job.Auth, d.Job.TLS
	}
	if ep.auth != nil && ep.auth.Type == endpoint.AuthOAuth2 {
		ep.tokenKey = tokenKey(scope, ep.auth, ep.tls.CAOnly())
	}
	return ep
}

// authorize sets the Authorization header of req as ep's auth says and
// returns the OAuth 2.0 access token it used ("" for other auth types). A
// token endpoint that fails is an error; the delivery has not been sent.
func (t *Transport) authorize(ctx context.Context, req *http.Request, ep endpointConfig) (string, error) {
	if ep.auth == nil {
		return "", nil
	}
	if ep.auth.Type != endpoint.AuthOAuth2 {
		if h := ep.auth.Header(); h != "" {
			req.Header.Set("Authorization", h)
		}
		return "", nil
	}
	// The token endpoint is reached like the target: SSRF-safe dialing, no
	// redirects, and the subscription's CA (not its client certificate).
	client, err := t.clients.get(ep.tls.CAOnly())
	if err != nil {
		return "", err
	}
	token, err := t.tokens.get(ctx, ep.tokenKey, ep.auth, client)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return token, nil
}
