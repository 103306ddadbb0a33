package api

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/ingest"
	"github.com/hooklane/hooklane/subscription"
	"github.com/hooklane/hooklane/tenant"
)

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
