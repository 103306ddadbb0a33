package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/subscription"
)

// The subscription endpoints (API.md §3) decode, call the subscription
// service (subscription.Service, which owns validation, the lifecycle and
// the delete cascade) and encode; errors are mapped in toProblem, a
// missing subscription here.

// subscriptionWithSecret is the create answer: the subscription and its
// secret, shown this once.
type subscriptionWithSecret struct {
	*subscription.Subscription
	Secret string `json:"secret"`
}

// MarshalJSON merges the secret into the subscription's JSON object.
func (s subscriptionWithSecret) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(s.Subscription)
	if err != nil {
		return nil, fmt.Errorf("encode subscription: %w", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("encode subscription: %w", err)
	}
	m["secret"], _ = json.Marshal(s.Secret) //nolint:errchkjson // a string always encodes
	return json.Marshal(m)                  //nolint:wrapcheck // plain map
}

func (s *Server) createSubscription(c *gin.Context) error {
	// The body is decoded over the defaults, so members it leaves out keep
	// them and explicit zeros are kept (and checked).
	var in struct {
		subscription.Subscription
		Secret *string `json:"secret"`
	}
	in.ApplyDefaults()
	if err := decodeJSON(c.Request, &in, adminBodyLimit); err != nil {
		return err
	}
	sub := &in.Subscription
	if err := s.checkSubscriptionClient(c, sub); err != nil {
		return err
	}
	secret, err := s.subscriptions.Create(c.Request.Context(), sub, in.Secret)
	if err != nil {
		return err
	}
	c.Header("Location", "/api/subscriptions/"+sub.ID)
	c.JSON(http.StatusCreated, subscriptionWithSecret{Subscription: sub, Secret: secret})
	return nil
}

func (s *Server) listSubscriptions(c *gin.Context) error {
	limit, cursor, err := listParams(c)
	if err != nil {
		return err
	}
	status := subscription.Status(c.Query("status"))
	if status != "" && status != subscription.StatusActive && status != subscription.StatusPaused {
		return unprocessable("status must be ACTIVE or PAUSED", FieldError{Pointer: "", Message: "query parameter status must be ACTIVE or PAUSED"})
	}
	p := &subscription.ListParams{
		Status: status, EventType: c.Query("eventType"), DestinationType: c.Query("destinationType"), Limit: limit, Cursor: cursor,
	}
	if v, ok := c.GetQuery("clientId"); ok {
		p.ClientID = &v
	}
	if p.DestinationType != "" || p.EventType != "" && !strings.Contains(p.EventType, "*") {
		// ?eventType=<code> lists the subscriptions that receive events of
		// that type, through patterns too, and ?destinationType= those of
		// one kind (API.md §15); the page is cut here, newest first.
		all, err := s.subscriptions.ListReceiving(c.Request.Context(), p)
		if err != nil {
			return err
		}
		items, next := pageDesc(all, func(sub *subscription.Subscription) string { return sub.ID }, p.Limit, p.Cursor)
		if err := s.subscriptions.WithCircuits(c.Request.Context(), items...); err != nil {
			return err
		}
		writePage(c, items, next)
		return nil
	}
	pg, err := s.subscriptions.List(c.Request.Context(), p)
	if err != nil {
		return err
	}
	writePage(c, pg.Subscriptions, pg.NextCursor)
	return nil
}

func (s *Server) getSubscription(c *gin.Context) error {
	sub, err := s.subscriptions.Get(c.Request.Context(), c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "subscription")
	}
	c.JSON(http.StatusOK, sub)
	return nil
}

func (s *Server) patchSubscription(c *gin.Context) error {
	next, err := s.subscriptions.Patch(c.Request.Context(), c.Param("id"), func(sub *subscription.Subscription) error {
		var patch map[string]json.RawMessage
		if err := decodeJSON(c.Request, &patch, adminBodyLimit); err != nil {
			return err
		}
		// Members a client cannot set are dropped before decoding, so a
		// wrong type there is ignored rather than reported.
		for _, immutable := range []string{"id", "createdAt", "updatedAt", "secret", "targetUrl"} {
			delete(patch, immutable)
		}
		if raw, ok := patch["target"]; ok && string(raw) == "null" {
			// "target": null removes the target (a subscription moving to a
			// destination, API.md §15); decoding null into a string would
			// leave it as stored.
			sub.Target = ""
			delete(patch, "target")
		}
		if raw, ok := patch["clientId"]; ok {
			// API.md §11: a subscription's client cannot change.
			if id, ok := clientIDOf(raw); !ok || !sameClient(id, sub.ClientID) {
				return unprocessable("clientId cannot change after creation", FieldError{Pointer: "/clientId", Message: "cannot change after creation"})
			}
		}
		// Decoding the patch's members over the stored subscription merges
		// them (RFC 7396 at the top level).
		b, err := json.Marshal(patch)
		if err != nil {
			return fmt.Errorf("re-encode patch: %w", err)
		}
		return decodeJSON(requestWithBody(c, b), sub, adminBodyLimit)
	})
	if err != nil {
		return s.notFoundOr(err, "subscription")
	}
	c.JSON(http.StatusOK, next)
	return nil
}

func (s *Server) pauseSubscription(c *gin.Context) error {
	sub, err := s.subscriptions.Pause(c.Request.Context(), c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "subscription")
	}
	c.JSON(http.StatusOK, sub)
	return nil
}

func (s *Server) resumeSubscription(c *gin.Context) error {
	sub, err := s.subscriptions.Resume(c.Request.Context(), c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "subscription")
	}
	c.JSON(http.StatusOK, sub)
	return nil
}

func (s *Server) deleteSubscription(c *gin.Context) error {
	if err := s.subscriptions.Delete(c.Request.Context(), c.Param("id")); err != nil {
		return s.notFoundOr(err, "subscription")
	}
	c.Status(http.StatusNoContent)
	return nil
}

func (s *Server) rotateSecret(c *gin.Context) error {
	secret, expires, err := s.subscriptions.RotateSecret(c.Request.Context(), c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "subscription")
	}
	c.JSON(http.StatusOK, gin.H{"secret": secret, "previousExpiresAt": formatTime(expires)})
	return nil
}

func (s *Server) getSecret(c *gin.Context) error {
	secrets, err := s.subscriptions.Secrets(c.Request.Context(), c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "subscription")
	}
	c.JSON(http.StatusOK, gin.H{"secrets": secrets})
	return nil
}
