package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"golang.org/x/sync/singleflight"

	"github.com/hooklane/hooklane/destination/endpoint"
)

// OAuth 2.0 token caching (API.md §14).
const (
	// OAuth2TokensDefault is how many access tokens are cached by default
	// (one per subscription and auth configuration in use).
	OAuth2TokensDefault = 4096
	// tokenEarly is how long before its expiry a token is replaced.
	tokenEarly = 10 * time.Second
	// tokenShortLived is the lifetime under which a token is replaced
	// after half of it instead (10 s early would leave too little, or
	// nothing).
	tokenShortLived = 20 * time.Second
	// tokenFetchTimeout bounds one token request. Deliveries waiting for
	// it give up at their own timeout; the request itself is shared by
	// every delivery waiting for the same token, so it is not bound to
	// any one of them.
	tokenFetchTimeout = 30 * time.Second
)

// tokens caches OAuth 2.0 access tokens obtained with the client
// credentials grant, one per key: the subscription (or "" for TASK jobs)
// and the hash of its auth and token-endpoint TLS configuration, so all
// jobs of a subscription on this instance share one token and a changed
// configuration (a PATCH) gets its own at once. A token is used until 10 s
// before it expires (half its lifetime for one that lives under 20 s; one
// without an expiry until dropped); drop forgets it after the target
// refused it. Concurrent deliveries needing the same new token wait for one
// request to the token endpoint. It is safe for concurrent use.
type tokens struct {
	cache   *lru.Cache[string, *cachedToken]
	group   singleflight.Group
	nowFunc func() time.Time
	// ctx is the base of every token request; close cancels it. A shared
	// fetch must not die with the delivery that started it, so it does not
	// run under that delivery's ctx.
	ctx    context.Context //nolint:containedctx // the cache's own lifetime, cancelled by close
	cancel context.CancelFunc
}

// cachedToken is one access token and when it must be replaced (zero:
// never).
type cachedToken struct {
	mu        sync.Mutex
	access    string
	refreshAt time.Time
}

func newTokens(size int, nowFunc func() time.Time) *tokens {
	cache, err := lru.New[string, *cachedToken](size)
	if err != nil {
		// Only a size below 1 makes it fail; New never passes one.
		panic(fmt.Sprintf("webhook: create token cache: %v", err))
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &tokens{cache: cache, nowFunc: nowFunc, ctx: ctx, cancel: cancel}
}

// tokenKey is the cache key of auth a for a subscription (scope "" for
// TASK jobs) whose token endpoint is reached with TLS t.
func tokenKey(scope string, a *endpoint.Auth, t *endpoint.TLS) string {
	return scope + "/" + a.Key() + "/" + t.Key()
}

// get returns the access token of key, requesting a new one from a's
// token endpoint through client when none is cached or it is due for
// replacement. It waits at most until ctx ends.
func (c *tokens) get(ctx context.Context, key string, a *endpoint.Auth, client *http.Client) (string, error) {
	now := c.nowFunc()
	ct, ok := c.cache.Get(key)
	if ok {
		if access, ok := ct.valid(now); ok {
			return access, nil
		}
	}
	//nolint:contextcheck // the shared fetch runs under the cache's ctx: see tokenCache.ctx
	ch := c.group.DoChan(key, func() (any, error) {
		return c.fetch(key, a, client)
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return "", r.Err
		}
		return r.Val.(string), nil //nolint:forcetypeassert // fetch returns a string
	case <-ctx.Done():
		return "", fmt.Errorf("wait for oauth2 token: %w", ctx.Err())
	}
}

// fetch requests a token and caches it under key.
func (c *tokens) fetch(key string, a *endpoint.Auth, client *http.Client) (string, error) {
	conf := &clientcredentials.Config{
		ClientID: a.ClientID, ClientSecret: a.ClientSecret, TokenURL: a.TokenURL, Scopes: a.Scopes,
		// RFC 6749 §2.3.1: servers must accept HTTP Basic; auto-detection
		// would send a second request on every failure.
		AuthStyle: oauth2.AuthStyleInHeader,
	}
	if a.Audience != "" {
		conf.EndpointParams = url.Values{"audience": {a.Audience}}
	}
	ctx, cancel := context.WithTimeout(c.ctx, tokenFetchTimeout)
	defer cancel()
	tok, err := conf.Token(context.WithValue(ctx, oauth2.HTTPClient, client))
	if err != nil {
		return "", tokenError(a.TokenURL, err)
	}
	if tok.AccessToken == "" {
		return "", fmt.Errorf("get oauth2 token from %s: the answer has no access_token", redacted(a.TokenURL))
	}
	// The library dates Expiry by the wall clock as it reads the answer;
	// the lifetime is measured against the same clock, and the replacement
	// time set on the gateway's.
	var lifetime time.Duration
	if !tok.Expiry.IsZero() {
		lifetime = max(time.Until(tok.Expiry), time.Nanosecond)
	}
	ct := &cachedToken{access: tok.AccessToken, refreshAt: refreshAt(c.nowFunc(), lifetime)}
	c.cache.Add(key, ct)
	return ct.access, nil
}

// refreshAt is when a token obtained at now that lives lifetime (0: no
// expiry given) must be replaced: 10 s before it expires, or after half its
// lifetime when it lives under 20 s; never (zero) without an expiry.
func refreshAt(now time.Time, lifetime time.Duration) time.Time {
	switch {
	case lifetime <= 0:
		return time.Time{}
	case lifetime < tokenShortLived:
		return now.Add(lifetime / 2)
	default:
		return now.Add(lifetime - tokenEarly)
	}
}

// valid returns the token when it may still be used at now.
func (ct *cachedToken) valid(now time.Time) (string, bool) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if ct.access == "" || (!ct.refreshAt.IsZero() && !now.Before(ct.refreshAt)) {
		return "", false
	}
	return ct.access, true
}

// drop forgets key's token when it is still access, the one a target
// refused; a newer token another delivery already obtained stays.
func (c *tokens) drop(key, access string) {
	ct, ok := c.cache.Peek(key)
	if !ok {
		return
	}
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if ct.access == access {
		ct.access = ""
	}
}

// close cancels the token requests under way and forgets every token.
func (c *tokens) close() {
	c.cancel()
	c.cache.Purge()
}

// tokenError describes a failed token request without the token
// endpoint's answer body, which may echo what was sent, and without
// credentials in the URL.
func tokenError(tokenURL string, err error) error {
	where := redacted(tokenURL)
	if re, ok := errors.AsType[*oauth2.RetrieveError](err); ok {
		msg := "token endpoint " + where + " refused the request"
		if re.Response != nil {
			msg = fmt.Sprintf("token endpoint %s answered %d %s", where, re.Response.StatusCode, http.StatusText(re.Response.StatusCode))
		}
		if re.ErrorCode != "" {
			msg += " (" + re.ErrorCode + ")"
		}
		return errors.New(msg)
	}
	return fmt.Errorf("get oauth2 token from %s: %w", where, err)
}

// redacted is rawURL with any password replaced, for messages.
func redacted(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil {
		return u.Redacted()
	}
	return rawURL
}
