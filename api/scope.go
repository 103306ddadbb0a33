package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/tenant"
)

// Client scope (API.md §11) is enforced here, in one place: auth calls
// guardScope for every request of a scoped key or token, before any
// handler runs. The request context then carries the scope
// (client.WithScope), which the few handlers that create or filter honour
// (a new subscription's clientId, the jobs listed with an event, the
// stream's messages).
//
// The guard works from an allowlist of route templates: a route that is not
// listed answers 403 to a scoped caller, so a route added later is closed
// to scoped callers until someone decides what its scope is. Listed routes
// that name an object by id are checked against the object's owner: another
// client's object, or an anchor-level one, answers 404 as if it did not
// exist. Listed collections are narrowed to the caller's client through
// their clientId (or, for the stream, clients) query parameter.

// ctxKeyClient is the gin context key of the caller's client ("" unscoped).
const ctxKeyClient = "api_key_client"

// owner says how a scoped route's object is found.
type owner int

const (
	ownerNone         owner = iota // no object: the route is open to the scope (reads of the catalogue)
	ownerSubscription              // :id is a subscription
	ownerJob                       // :id is a dispatch job
	ownerEvent                     // :id is an event
	ownerList                      // a collection narrowed by ?clientId=
	ownerStream                    // the stream, narrowed by ?clients=
	ownerCreate                    // a create whose body the handler checks against the scope
	ownerReplay                    // :id is a replay (its subscription's client)
)

// scopedRouteKinds returns how a listed route ("METHOD path") is scoped;
// ok is false for a route not on the list. Everything under
// /api/subscriptions/:id/ is a subscription's and is checked as such
// (scopedRoute), so a new subscription sub-resource is covered.
func scopedRouteKinds(key string) (owner, bool) {
	switch key {
	case "GET /api/openapi.json",
		"GET /api/auth/whoami",
		"GET /api/event-types",
		"GET /api/event-types/:code",
		"GET /api/event-types/:code/versions/:version",
		"POST /api/event-types/:code/versions/:version/validate":
		return ownerNone, true
	case "POST /api/events",
		"POST /api/subscriptions":
		return ownerCreate, true
	case "GET /api/events",
		"GET /api/subscriptions",
		"GET /api/dispatch-jobs":
		return ownerList, true
	case "GET /api/events/:id":
		return ownerEvent, true
	case "GET /api/dispatch-jobs/:id",
		"POST /api/dispatch-jobs/:id/retry",
		"POST /api/dispatch-jobs/:id/cancel",
		"POST /api/dispatch-jobs/:id/complete",
		"POST /api/dispatch-jobs/:id/fail",
		"POST /api/dispatch-jobs/:id/heartbeat":
		return ownerJob, true
	case "GET /api/stream",
		"GET /api/stream/ws":
		return ownerStream, true
	case "GET /api/replays/:id":
		return ownerReplay, true
	}
	return 0, false
}

// scopedRoute returns how a route is scoped; ok is false for a route a
// scoped key may not use.
func scopedRoute(method, path string) (owner, bool) {
	if o, ok := scopedRouteKinds(method + " " + path); ok {
		return o, true
	}
	if path == "/api/subscriptions/:id" || strings.HasPrefix(path, "/api/subscriptions/:id/") {
		return ownerSubscription, true
	}
	return 0, false
}

// guardScope checks a scoped request against its route; on refusal it has
// written the answer and aborted. It stores the scope in the request
// context for the handler.
func (s *Server) guardScope(c *gin.Context, clientID string) bool {
	ctx := tenant.WithScope(c.Request.Context(), clientID)
	c.Request = c.Request.WithContext(ctx)
	c.Set(ctxKeyClient, clientID)
	route := c.FullPath()
	kind, ok := scopedRoute(c.Request.Method, route)
	if !ok {
		writeProblem(c, newProblem(http.StatusForbidden, fmt.Sprintf("a key scoped to client %q may not use %s %s", clientID, c.Request.Method, route)))
		c.Abort()
		return false
	}
	var err error
	switch kind {
	case ownerSubscription, ownerJob, ownerEvent, ownerReplay:
		err = s.checkOwner(c, kind, clientID)
	case ownerList:
		err = narrowQuery(c, "clientId", clientID)
	case ownerStream:
		err = narrowQuery(c, "clients", clientID)
	case ownerNone, ownerCreate:
	}
	if err != nil {
		p, internal := toProblem(err)
		if internal {
			s.cfg.Logger.ErrorContext(ctx, "scope check failed", "path", route, "error", err)
		}
		writeProblem(c, p)
		c.Abort()
		return false
	}
	return true
}

// narrowQuery sets the query parameter name to clientID; a value naming
// any other client is a 403.
func narrowQuery(c *gin.Context, name, clientID string) error {
	q := c.Request.URL.Query()
	for _, v := range q[name] {
		for id := range strings.SplitSeq(v, ",") {
			if id = strings.TrimSpace(id); id != "" && id != clientID {
				return newProblem(http.StatusForbidden, fmt.Sprintf("a key scoped to client %q may not read client %q", clientID, id))
			}
		}
	}
	q.Set(name, clientID)
	c.Request.URL.RawQuery = q.Encode()
	return nil
}

// checkOwner answers 404 unless the object the route names belongs to
// clientID. A missing object passes: the handler answers its own 404.
func (s *Server) checkOwner(c *gin.Context, kind owner, clientID string) error {
	ctx := c.Request.Context()
	id := c.Param("id")
	var (
		what  string
		owner string
		err   error
	)
	switch kind {
	case ownerSubscription:
		what = "subscription"
		sub, gerr := s.cfg.Store.SubscriptionGetByID(ctx, id)
		if err = gerr; err == nil && sub.ClientID != nil {
			owner = *sub.ClientID
		}
	case ownerJob:
		what = "dispatch job"
		owner, err = s.jobOwner(c, id)
	case ownerEvent:
		what = "event"
		ev, gerr := s.cfg.Store.EventGetByID(ctx, id)
		if err = gerr; err == nil {
			owner = ev.Event.Ext(clientExtension)
		}
	case ownerReplay:
		what = "replay"
		if s.cfg.Replays == nil {
			return nil
		}
		r, gerr := s.cfg.Replays.Get(ctx, id)
		if err = gerr; err == nil && r.ClientID != nil {
			owner = *r.ClientID
		}
	default:
		return nil
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check owner of %s %s: %w", what, id, err)
	}
	if owner != clientID {
		return notFound(what)
	}
	return nil
}

// jobOwner returns the client of a job: its subscription's (a TASK job, or
// one whose subscription is gone, is the platform's: "").
func (s *Server) jobOwner(c *gin.Context, id string) (string, error) {
	j, err := s.cfg.Store.JobGetByID(c.Request.Context(), id)
	if err != nil {
		return "", err
	}
	return s.subscriptionOwner(c, j.SubscriptionID)
}

// subscriptionOwner returns the client of a subscription, from the
// matching index when it holds it, else from the store; "" for an
// anchor-level, missing or empty one.
func (s *Server) subscriptionOwner(c *gin.Context, subscriptionID string) (string, error) {
	if subscriptionID == "" {
		return "", nil
	}
	sub, err := s.cfg.Subscriptions.Get(c.Request.Context(), subscriptionID)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("get subscription %s: %w", subscriptionID, err)
	}
	if sub.ClientID == nil {
		return "", nil
	}
	return *sub.ClientID, nil
}

// scopeOf returns the caller's client ("" for an unscoped caller).
func scopeOf(c *gin.Context) string { return clientScope(c.Request.Context()) }

// clientScope returns the client ctx is scoped to ("" for none).
func clientScope(ctx context.Context) string {
	id, _ := tenant.ScopeOf(ctx)
	return id
}

// clientSubscriptionIDs returns the ids of the subscriptions of a client,
// from the matching index (every instance's index holds every
// subscription).
func (s *Server) clientSubscriptionIDs(c *gin.Context, clientID string) ([]string, error) {
	ix, err := s.cfg.Subscriptions.Index(c.Request.Context())
	if err != nil {
		return nil, fmt.Errorf("read subscription index: %w", err)
	}
	ids := []string{}
	for _, sub := range ix.Subscriptions() {
		if sub.ClientID != nil && *sub.ClientID == clientID {
			ids = append(ids, sub.ID)
		}
	}
	slices.Sort(ids)
	return ids, nil
}
