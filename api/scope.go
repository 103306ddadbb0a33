package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

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
	var k tenant.Kind
	switch kind {
	case ownerSubscription:
		k = tenant.KindSubscription
	case ownerJob:
		k = tenant.KindJob
	case ownerEvent:
		k = tenant.KindEvent
	case ownerReplay:
		k = tenant.KindReplay
	default:
		return nil
	}
	id := c.Param("id")
	owner, found, err := s.owners.Owner(c.Request.Context(), k, id)
	if err != nil {
		return fmt.Errorf("check owner of %s %s: %w", k, id, err)
	}
	if found && owner != clientID {
		return notFound(k.String())
	}
	return nil
}

// scopeOf returns the caller's client ("" for an unscoped caller).
func scopeOf(c *gin.Context) string { return clientScope(c.Request.Context()) }

// clientScope returns the client ctx is scoped to ("" for none).
func clientScope(ctx context.Context) string {
	id, _ := tenant.ScopeOf(ctx)
	return id
}
