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
	if c.GetString(ctxKeyName) != "" {
		name, role = c.GetString(ctxKeyName), c.GetString(ctxKeyRole)
	}
	out := gin.H{"name": name, "role": role, "authEnabled": s.cfg.Keys.Len() > 0}
	if id := scopeOf(c); id != "" {
		// A scoped caller (a portal) learns its client: id and name, for
		// the page's branding.
		out["clientId"] = id
		if s.clients != nil {
			if cl, err := s.clients.Get(c.Request.Context(), id); err == nil {
				out["client"] = gin.H{"id": cl.ID, "name": cl.Name, "status": cl.Status}
			}
		}
	}
	c.JSON(http.StatusOK, out)
	return nil
}
