package api

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// whoamiAnonymous is the name reported when authentication is off.
const whoamiAnonymous = "anonymous"

// whoami serves GET /api/auth/whoami: the name and role of the key that
// called it, so a client (the dashboard) can hide what the role may not do.
// With authentication off every caller is an anonymous admin.
func (s *Server) whoami(c *gin.Context) error {
	name, role := whoamiAnonymous, string(RoleAdmin)
	if s.cfg.Keys.Len() > 0 {
		name, role = c.GetString(ctxKeyName), c.GetString(ctxKeyRole)
	}
	c.JSON(http.StatusOK, gin.H{"name": name, "role": role, "authEnabled": s.cfg.Keys.Len() > 0})
	return nil
}
