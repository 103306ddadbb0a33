package api

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
)

// auth allows admin keys and keys of the given roles. With no keys
// configured, it allows everything (the server then listens on loopback
// only) except a request that presents a client token, which is
// authenticated and scoped by it. A key or token scoped to a client is
// then checked against the route by guardScope (api/scope.go).
func (s *Server) auth(roles ...Role) gin.HandlerFunc {
	return func(c *gin.Context) {
		who, ok := s.identify(c)
		if !ok {
			return
		}
		if who == nil {
			c.Next()
			return
		}
		c.Set(ctxKeyName, who.Name)
		c.Set(ctxKeyRole, string(who.Role))
		if who.Role != RoleAdmin && !slices.Contains(roles, who.Role) {
			writeProblem(c, newProblem(http.StatusForbidden, fmt.Sprintf("the key %q (role %s) may not do this", who.Name, who.Role)))
			c.Abort()
			return
		}
		if who.ClientID != "" && !s.guardScope(c, who.ClientID) {
			return
		}
		c.Next()
	}
}

// bearerToken reads the token of an Authorization header value in the
// Bearer scheme. The scheme name is case-insensitive and may be followed by
// several spaces (RFC 9110 §11.1, §11.4); ok is false for another scheme
// or an empty token.
func bearerToken(header string) (string, bool) {
	scheme, token, found := strings.Cut(strings.TrimSpace(header), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
