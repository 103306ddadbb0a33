package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/ingest"
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

// checkEventClients applies API.md §11 to the events of an ingest request
// before anything is validated further or stored: a scoped producer's
// events belong to its client (a clientid naming another → 403); a named
// client must exist and be ACTIVE (else 422 at /clientid, /i/clientid in a
// batch). The first problem decides.
func (s *Server) checkEventClients(c *gin.Context, req *ingest.Request) error {
	scope := scopeOf(c)
	for i := range req.Events {
		ev := &req.Events[i]
		ptr := "/clientid"
		if req.Mode == ingest.ModeBatch {
			ptr = fmt.Sprintf("/%d/clientid", i)
		}
		raw, named := ev.Extensions[clientExtension]
		id, isString := raw.(string)
		if named && !isString {
			return unprocessable("clientid must be a string", FieldError{Pointer: ptr, Message: "must be a string"})
		}
		if scope != "" {
			if named && id != scope {
				s.cfg.Metrics.ObserveClientEvent(scope, "refused")
				return newProblem(http.StatusForbidden, fmt.Sprintf("a key scoped to client %q may not post events of client %q", scope, id),
					FieldError{Pointer: ptr, Message: "names another client than the key's"})
			}
			if ev.Extensions == nil {
				ev.Extensions = map[string]any{}
			}
			ev.Extensions[clientExtension] = scope
			id = scope
		}
		if id == "" && !named {
			continue
		}
		if s.clients == nil {
			return newProblem(http.StatusServiceUnavailable, "clients are not served here")
		}
		if err := s.clients.CheckEventClient(c.Request.Context(), id, ptr); err != nil {
			if _, gerr := s.clients.Get(c.Request.Context(), id); gerr == nil {
				// Only existing clients get a label: unknown ids are the
				// producer's to choose.
				s.cfg.Metrics.ObserveClientEvent(id, "refused")
			}
			return err
		}
	}
	return nil
}

// checkSubscriptionClient applies API.md §11 to a new subscription: a
// scoped caller's subscription is its client's (another → 403); a clientId
// must name an existing client (else 422 at /clientId).
func (s *Server) checkSubscriptionClient(c *gin.Context, sub *subscription.Subscription) error {
	if scope := scopeOf(c); scope != "" {
		if sub.ClientID != nil && *sub.ClientID != scope {
			return newProblem(http.StatusForbidden, fmt.Sprintf("a key scoped to client %q may not create subscriptions of client %q", scope, *sub.ClientID),
				FieldError{Pointer: "/clientId", Message: "names another client than the key's"})
		}
		sub.ClientID = &scope
	}
	if sub.ClientID == nil {
		return nil
	}
	if !tenant.ValidID(*sub.ClientID) {
		return unprocessable("clientId is not a client id", FieldError{Pointer: "/clientId", Message: "no client has this id"})
	}
	if s.clients == nil {
		return newProblem(http.StatusServiceUnavailable, "clients are not served here")
	}
	return s.clients.CheckSubscriptionClient(c.Request.Context(), *sub.ClientID)
}

// visibleJobs keeps the jobs a scoped caller may see: those of its
// client's subscriptions (a job of an anchor-level subscription is the
// platform's, even for one of the client's events). An unscoped caller
// sees all.
func visibleJobs[T any](s *Server, c *gin.Context, jobs []T, subscriptionOf func(T) string) []T {
	scope := scopeOf(c)
	if scope == "" {
		return jobs
	}
	out := make([]T, 0, len(jobs))
	for _, j := range jobs {
		if o, _, err := s.owners.Owner(c.Request.Context(), tenant.KindSubscription, subscriptionOf(j)); err == nil && o == scope {
			out = append(out, j)
		}
	}
	return out
}

// clientIDOf reads a decoded subscription patch's clientId member, for the
// immutability check.
func clientIDOf(raw json.RawMessage) (*string, bool) {
	var id *string
	if err := json.Unmarshal(raw, &id); err != nil {
		return nil, false
	}
	return id, true
}

// sameClient reports whether two client ids are equal (nil equals nil).
func sameClient(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}
