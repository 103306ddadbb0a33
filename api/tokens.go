package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/tenant"
)

// tokenView is a token as listed: never the token itself.
type tokenView struct {
	ID        string               `json:"id"`
	Name      string               `json:"name"`
	Role      string               `json:"role"`
	ExpiresAt cloudevent.Timestamp `json:"expiresAt"`
	CreatedAt cloudevent.Timestamp `json:"createdAt"`
	Token     string               `json:"token,omitempty"`
}

func newTokenView(t *tenant.Token) tokenView {
	return tokenView{ID: t.ID, Name: t.Name, Role: t.Role, ExpiresAt: cloudevent.Timestamp(t.ExpiresAt), CreatedAt: cloudevent.Timestamp(t.CreatedAt)}
}

func (s *Server) issueToken(c *gin.Context) error {
	var in struct {
		Role       string `json:"role"`
		TTLSeconds *int64 `json:"ttlSeconds"`
		Name       string `json:"name"`
	}
	if err := decodeJSON(c.Request, &in, adminBodyLimit); err != nil {
		return err
	}
	t, secret, err := s.clients.Issue(c.Request.Context(), c.Param("id"), tenant.IssueParams{Role: in.Role, TTLSeconds: in.TTLSeconds, Name: in.Name})
	if err != nil {
		return s.notFoundOr(err, "client")
	}
	v := newTokenView(t)
	v.Token = secret
	c.JSON(http.StatusCreated, v)
	return nil
}

func (s *Server) listTokens(c *gin.Context) error {
	ts, err := s.clients.Tokens(c.Request.Context(), c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "client")
	}
	out := make([]tokenView, len(ts))
	for i, t := range ts {
		out[i] = newTokenView(t)
	}
	writePage(c, out, "")
	return nil
}

func (s *Server) revokeToken(c *gin.Context) error {
	if err := s.clients.Revoke(c.Request.Context(), c.Param("id"), c.Param("tokenId")); err != nil {
		return s.notFoundOr(err, "token")
	}
	c.Status(http.StatusNoContent)
	return nil
}
