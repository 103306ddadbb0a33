package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/tenant"
)

// errNoKey is authenticate's answer to a request without a bearer token
// while authentication is on.
var errNoKey = errors.New("an API key is required: Authorization: Bearer <key>")

// ctxKeyCaller is the gin context key of the caller's *credential.
const ctxKeyCaller = "api_caller"

// credential is who a request authenticated as: a configured key or a
// client token. The stream keeps it to authenticate again while it is
// open (api/stream_auth.go).
type credential struct {
	key Key
	// header is the Authorization header value presented; a long-lived
	// request presents it again to authenticate (reauthenticate).
	header string
	// tokenID is the client token's id ("" for a configured key).
	tokenID string
	// expiresAt is the client token's expiry (zero for a configured key).
	expiresAt time.Time
}

// owner names the credential for per-credential limits: a token by its id,
// a configured key by its name (names are unique).
func (cr *credential) owner() string {
	if cr.tokenID != "" {
		return "token:" + cr.tokenID
	}
	return "key:" + cr.key.Name
}

// revocable reports whether the credential can stop working while the
// process runs: a client token (revoked, expired, its client deleted) or a
// key scoped to a client (its client deleted). An unscoped configured key
// lasts as long as the process.
func (cr *credential) revocable() bool { return cr.tokenID != "" || cr.key.ClientID != "" }

// identify finds who calls: a configured key (scoped or not) or a client
// token (API.md §11). It returns nil, true when authentication is off and
// no token is presented (everything is allowed). On failure it has written
// a 401 (or a 503 when the store cannot be read) and aborted.
func (s *Server) identify(c *gin.Context) (*Key, bool) {
	cr, err := s.authenticate(c.Request.Context(), c.GetHeader("Authorization"))
	if errors.Is(err, errNoKey) {
		c.Header("WWW-Authenticate", `Bearer realm="hooklane"`)
		writeProblem(c, newProblem(http.StatusUnauthorized, errNoKey.Error()))
		c.Abort()
		return nil, false
	}
	if err != nil {
		s.authFailed(c, err)
		return nil, false
	}
	if cr == nil {
		return nil, true
	}
	c.Set(ctxKeyCaller, cr)
	return &cr.key, true
}

// authenticate reads an Authorization header value: nil when
// authentication is off and no client token is presented; errNoKey without
// a bearer token; a *client.Unauthorized for an unknown key, or an
// unknown, revoked or expired token, or a scoped key or token whose client
// does not exist; another error when the store cannot be read. It reads
// the store for every client token and scoped key, so a revocation holds
// at once on every instance; a stream calls it again while it is open
// (reauthenticate), so a long-lived request is judged by the same rules.
func (s *Server) authenticate(ctx context.Context, header string) (*credential, error) {
	token, hasToken := bearerToken(header)
	isClientToken := hasToken && strings.HasPrefix(token, tenant.TokenPrefix)
	if s.cfg.Keys.Len() == 0 && !isClientToken {
		return nil, nil //nolint:nilnil // nil is "authentication is off", a valid answer
	}
	if !hasToken {
		return nil, errNoKey
	}
	if isClientToken {
		return s.authenticateToken(ctx, token, header)
	}
	key, ok := s.cfg.Keys.lookup(token)
	if !ok {
		return nil, &tenant.Unauthorized{Detail: "unknown API key"}
	}
	if key.ClientID != "" {
		if err := s.clientExists(ctx, key.ClientID); err != nil {
			return nil, err
		}
	}
	return &credential{key: key, header: header}, nil
}

// authenticateToken authenticates a client token: unknown, revoked, expired,
// or of a client that is gone → *client.Unauthorized. The store is read on
// every call, so a revocation holds at once on every instance.
func (s *Server) authenticateToken(ctx context.Context, token, header string) (*credential, error) {
	if s.clients == nil {
		return nil, &tenant.Unauthorized{Detail: "client tokens are not served here"}
	}
	t, _, err := s.clients.Authenticate(ctx, token)
	if err != nil {
		return nil, err
	}
	// The name shows in the access log and the dashboard: the token's own
	// name when it has one, with its id (never the token).
	name := "token:" + t.ID
	if t.Name != "" {
		name = t.Name + " (token:" + t.ID + ")"
	}
	return &credential{
		key:    Key{Name: name, Role: Role(t.Role), ClientID: t.ClientID},
		header: header, tokenID: t.ID, expiresAt: t.ExpiresAt,
	}, nil
}

// clientExists checks that a scoped key's client exists: a
// *client.Unauthorized when not.
func (s *Server) clientExists(ctx context.Context, id string) error {
	if s.clients == nil {
		return &tenant.Unauthorized{Detail: "client-scoped keys are not served here"}
	}
	if _, err := s.clients.ClientOf(ctx, id); err != nil {
		return err
	}
	return nil
}

// credentialOf returns the credential the request authenticated with (nil
// when authentication is off and none was presented).
func credentialOf(c *gin.Context) *credential {
	v, ok := c.Get(ctxKeyCaller)
	if !ok {
		return nil
	}
	cr, _ := v.(*credential)
	return cr
}

func (s *Server) authFailed(c *gin.Context, err error) {
	if un, ok := errors.AsType[*tenant.Unauthorized](err); ok {
		s.unauthorized(c, un.Detail)
		return
	}
	p, internal := toProblem(err)
	if internal {
		s.cfg.Logger.ErrorContext(c.Request.Context(), "authenticate", "error", err)
	}
	writeProblem(c, p)
	c.Abort()
}

func (s *Server) unauthorized(c *gin.Context, detail string) {
	c.Header("WWW-Authenticate", `Bearer realm="hooklane", error="invalid_token"`)
	writeProblem(c, newProblem(http.StatusUnauthorized, detail))
	c.Abort()
}
