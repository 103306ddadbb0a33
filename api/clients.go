package api

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/subscription"
	"github.com/hooklane/hooklane/tenant"
)

// The client endpoints (API.md §11) decode, call the client service and
// encode. Only unscoped keys reach them: guardScope refuses every
// /api/clients route to a scoped caller.

// clientExtension is the CloudEvents extension naming an event's client.
const clientExtension = subscription.ClientExtension

// clientRoutes registers the client and token endpoints: unscoped admin
// keys only.
func (s *Server) clientRoutes(a *gin.RouterGroup) {
	a.POST("/clients", s.auth(), s.h(s.createClient))
	a.GET("/clients", s.auth(RoleViewer), s.h(s.listClients))
	a.GET("/clients/:id", s.auth(RoleViewer), s.h(s.getClient))
	a.PATCH("/clients/:id", s.auth(), s.h(s.patchClient))
	a.DELETE("/clients/:id", s.auth(), s.h(s.deleteClient))
	a.POST("/clients/:id/tokens", s.auth(), s.h(s.issueToken))
	a.GET("/clients/:id/tokens", s.auth(), s.h(s.listTokens))
	a.DELETE("/clients/:id/tokens/:tokenId", s.auth(), s.h(s.revokeToken))
}

// clientProblem maps the client service's typed errors.
func clientProblem(err error) (*Problem, bool) {
	var (
		rej  *tenant.Rejection
		conf *tenant.Conflict
		un   *tenant.Unauthorized
	)
	switch {
	case errors.As(err, &rej):
		return newProblem(rej.Status, rej.Detail, FieldError{Pointer: rej.Pointer, Message: rej.Detail}), true
	case errors.As(err, &conf):
		return conflict(conf.Detail), true
	case errors.As(err, &un):
		return newProblem(http.StatusUnauthorized, un.Detail), true
	}
	return nil, false
}

func (s *Server) createClient(c *gin.Context) error {
	var in struct {
		ID          string            `json:"id"`
		Name        string            `json:"name"`
		Description string            `json:"description"`
		Metadata    map[string]string `json:"metadata"`
	}
	if err := decodeJSON(c.Request, &in, adminBodyLimit); err != nil {
		return err
	}
	cl := &tenant.Client{ID: in.ID, Name: in.Name, Description: in.Description, Metadata: in.Metadata}
	if err := s.clients.Create(c.Request.Context(), cl); err != nil {
		return err
	}
	c.Header("Location", "/api/clients/"+cl.ID)
	c.JSON(http.StatusCreated, cl)
	return nil
}

func (s *Server) listClients(c *gin.Context) error {
	limit, cursor, err := listParams(c)
	if err != nil {
		return err
	}
	status := tenant.Status(c.Query("status"))
	if status != "" && status != tenant.StatusActive && status != tenant.StatusSuspended {
		return unprocessable("status must be ACTIVE or SUSPENDED", FieldError{Pointer: "", Message: "query parameter status must be ACTIVE or SUSPENDED"})
	}
	pg, err := s.clients.List(c.Request.Context(), &tenant.ListParams{Status: status, Limit: limit, Cursor: cursor})
	if err != nil {
		return err
	}
	writePage(c, pg.Clients, pg.NextCursor)
	return nil
}

func (s *Server) getClient(c *gin.Context) error {
	cl, err := s.clients.Get(c.Request.Context(), c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "client")
	}
	c.JSON(http.StatusOK, cl)
	return nil
}

func (s *Server) patchClient(c *gin.Context) error {
	var patch struct {
		Name        *string            `json:"name"`
		Description *string            `json:"description"`
		Metadata    *map[string]string `json:"metadata"`
		Status      *tenant.Status     `json:"status"`
	}
	if err := decodeJSON(c.Request, &patch, adminBodyLimit); err != nil {
		return err
	}
	next, err := s.clients.Patch(c.Request.Context(), c.Param("id"), func(cl *tenant.Client) error {
		if patch.Name != nil {
			cl.Name = *patch.Name
		}
		if patch.Description != nil {
			cl.Description = *patch.Description
		}
		if patch.Metadata != nil {
			cl.Metadata = *patch.Metadata
		}
		if patch.Status != nil {
			cl.Status = *patch.Status
		}
		return nil
	})
	if err != nil {
		return s.notFoundOr(err, "client")
	}
	c.JSON(http.StatusOK, next)
	return nil
}

func (s *Server) deleteClient(c *gin.Context) error {
	if err := s.clients.Delete(c.Request.Context(), c.Param("id")); err != nil {
		return s.notFoundOr(err, "client")
	}
	c.Status(http.StatusNoContent)
	return nil
}
