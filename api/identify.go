package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/client"
)

// identify finds who calls: a configured key (scoped or not) or a client
// token (API.md §11). It returns nil, true when authentication is off and
// no token is presented (everything is allowed). On failure it has written
// a 401 (or a 503 when the store cannot be read) and aborted.
func (s *Server) identify(c *gin.Context) (*Key, bool) {
	token, hasToken := bearerToken(c.GetHeader("Authorization"))
	isClientToken := hasToken && strings.HasPrefix(token, client.TokenPrefix)
	if s.cfg.Keys.Len() == 0 && !isClientToken {
		return nil, true
	}
	if !hasToken {
		c.Header("WWW-Authenticate", `Bearer realm="hooklane"`)
		writeProblem(c, newProblem(http.StatusUnauthorized, "an API key is required: Authorization: Bearer <key>"))
		c.Abort()
		return nil, false
	}
	if isClientToken {
		return s.identifyToken(c, token)
	}
	key, ok := s.cfg.Keys.lookup(token)
	if !ok {
		s.unauthorized(c, "unknown API key")
		return nil, false
	}
	if key.ClientID != "" && !s.clientExists(c, key.ClientID) {
		return nil, false
	}
	return &key, true
}

// identifyToken authenticates a client token: unknown, revoked, expired,
// or of a client that is gone → 401. The store is read on every request, so
// a revocation holds at once on every instance.
func (s *Server) identifyToken(c *gin.Context, token string) (*Key, bool) {
	if s.clients == nil {
		s.unauthorized(c, "client tokens are not served here")
		return nil, false
	}
	t, _, err := s.clients.Authenticate(c.Request.Context(), token)
	if err != nil {
		s.authFailed(c, err)
		return nil, false
	}
	// The name shows in the access log and the dashboard: the token's own
	// name when it has one, with its id (never the token).
	name := "token:" + t.ID
	if t.Name != "" {
		name = t.Name + " (token:" + t.ID + ")"
	}
	return &Key{Name: name, Role: Role(t.Role), ClientID: t.ClientID}, true
}

// clientExists reports whether a scoped key's client exists; when not, it
// has answered 401.
func (s *Server) clientExists(c *gin.Context, id string) bool {
	if s.clients == nil {
		s.unauthorized(c, "client-scoped keys are not served here")
		return false
	}
	if _, err := s.clients.ClientOf(c.Request.Context(), id); err != nil {
		s.authFailed(c, err)
		return false
	}
	return true
}

func (s *Server) authFailed(c *gin.Context, err error) {
	if un, ok := errors.AsType[*client.Unauthorized](err); ok {
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
