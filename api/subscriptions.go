package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/subscription"
	"github.com/hooklane/hooklane/webhook"
)

// secretOverlap is how long a rotated-out secret keeps signing.
const secretOverlap = 24 * time.Hour

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
	m["secret"], _ = json.Marshal(s.Secret)
	return json.Marshal(m) //nolint:wrapcheck // plain map
}

// checkSubscription validates a subscription and what the store and network
// must confirm: the pool exists, the target's host is public.
func (s *Server) checkSubscription(c *gin.Context, sub *subscription.Subscription) error {
	errs := sub.Validate()
	if sub.DispatchPoolID != nil && *sub.DispatchPoolID != "" {
		if _, err := s.cfg.Store.PoolGetByID(c.Request.Context(), *sub.DispatchPoolID); errors.Is(err, store.ErrNotFound) {
			errs = append(errs, subscription.FieldError{Pointer: "/dispatchPoolId", Message: "no dispatch pool has this id"})
		} else if err != nil {
			return err //nolint:wrapcheck // mapped by h
		}
	}
	if len(errs) == 0 && sub.Target != "" && !s.cfg.AllowPrivateTargets {
		if err := s.checkTarget(c, sub.Target); err != nil {
			errs = append(errs, subscription.FieldError{Pointer: "/target", Message: err.Error()})
		}
	}
	if len(errs) > 0 {
		out := make([]FieldError, len(errs))
		for i, e := range errs {
			out[i] = FieldError{Pointer: e.Pointer, Message: e.Message}
		}
		return unprocessable("the subscription is invalid", out...)
	}
	return nil
}

// checkTarget refuses a target whose host resolves to a non-public address.
func (s *Server) checkTarget(c *gin.Context, target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return fmt.Errorf("is not a valid URL")
	}
	if err := webhook.CheckTarget(c.Request.Context(), s.cfg.Resolver, u.Hostname()); err != nil {
		if errors.Is(err, webhook.ErrPrivateTarget) {
			return errors.New("resolves to a loopback, private or otherwise non-public address")
		}
		return errors.New("host could not be resolved")
	}
	return nil
}

func (s *Server) createSubscription(c *gin.Context) error {
	sub := &subscription.Subscription{}
	sub.ApplyDefaults()
	var in struct {
		subscription.Subscription
		Secret *string `json:"secret"`
	}
	in.Subscription = *sub
	if err := decodeJSON(c.Request, &in, adminBodyLimit); err != nil {
		return err
	}
	*sub = in.Subscription
	now := s.now()
	sub.ID = s.cfg.IDs.New()
	sub.CreatedAt, sub.UpdatedAt = now, now
	if err := s.checkSubscription(c, sub); err != nil {
		return err
	}
	secret := subscription.NewSecret()
	if in.Secret != nil {
		if _, err := subscription.SecretKey(*in.Secret); err != nil {
			return unprocessable("the secret is invalid", FieldError{Pointer: "/secret", Message: err.Error()})
		}
		secret = *in.Secret
	}
	sub.Secrets = []subscription.Secret{{Value: secret}}
	if err := s.cfg.Store.SubscriptionInsert(c.Request.Context(), sub); err != nil {
		if isConflict(err) {
			return conflict(fmt.Sprintf("a subscription with code %q exists for this client", sub.Code))
		}
		return err //nolint:wrapcheck // mapped by h
	}
	s.cfg.Subscriptions.Invalidate()
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
	p := &subscription.ListParams{Status: status, EventType: c.Query("eventType"), Limit: limit, Cursor: cursor}
	if v, ok := c.GetQuery("clientId"); ok {
		p.ClientID = &v
	}
	if p.EventType != "" && !strings.Contains(p.EventType, "*") {
		return s.listSubscriptionsForType(c, p)
	}
	pg, err := s.cfg.Store.SubscriptionList(c.Request.Context(), p)
	if err != nil {
		return err //nolint:wrapcheck // mapped by h
	}
	if err := s.withCircuits(c.Request.Context(), pg.Subscriptions...); err != nil {
		return err
	}
	writePage(c, pg.Subscriptions, pg.NextCursor)
	return nil
}

// listSubscriptionsForType answers ?eventType=<code> with the subscriptions
// that receive events of that type: a binding equal to the code or a
// pattern matching it (the store filters on equal bindings only). The
// store's other filters hold; the page is cut here, newest first.
func (s *Server) listSubscriptionsForType(c *gin.Context, want *subscription.ListParams) error {
	p := *want
	p.EventType, p.Limit, p.Cursor = "", limitMax, ""
	var all []*subscription.Subscription
	for {
		pg, err := s.cfg.Store.SubscriptionList(c.Request.Context(), &p)
		if err != nil {
			return err //nolint:wrapcheck // mapped by h
		}
		for _, sub := range pg.Subscriptions {
			if slices.ContainsFunc(sub.EventTypes, func(b subscription.Binding) bool {
				return subscription.MatchPattern(b.EventTypeCode, want.EventType)
			}) {
				all = append(all, sub)
			}
		}
		if pg.NextCursor == "" || pg.NextCursor == p.Cursor {
			break
		}
		p.Cursor = pg.NextCursor
	}
	items, next, err := pageDesc(all, func(sub *subscription.Subscription) string { return sub.ID }, want.Limit, want.Cursor)
	if err != nil {
		return err
	}
	if err := s.withCircuits(c.Request.Context(), items...); err != nil {
		return err
	}
	writePage(c, items, next)
	return nil
}

func (s *Server) getSubscription(c *gin.Context) error {
	sub, err := s.cfg.Store.SubscriptionGetByID(c.Request.Context(), c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "subscription")
	}
	if err := s.withCircuits(c.Request.Context(), sub); err != nil {
		return err
	}
	c.JSON(http.StatusOK, sub)
	return nil
}

// writeSubscription stores a changed subscription and drops the matching
// cache, so the change applies to the next event on this instance.
func (s *Server) writeSubscription(c *gin.Context, sub *subscription.Subscription) error {
	sub.UpdatedAt = s.now()
	if sub.Status == subscription.StatusActive {
		sub.StatusReason = nil // only a paused subscription has a reason
	}
	if err := s.cfg.Store.SubscriptionUpdate(c.Request.Context(), sub); err != nil {
		if isConflict(err) {
			return conflict(fmt.Sprintf("a subscription with code %q exists for this client", sub.Code))
		}
		return s.notFoundOr(err, "subscription")
	}
	s.cfg.Subscriptions.Invalidate()
	return nil
}

func (s *Server) patchSubscription(c *gin.Context) error {
	cur, err := s.cfg.Store.SubscriptionGetByID(c.Request.Context(), c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "subscription")
	}
	var patch map[string]json.RawMessage
	if err := decodeJSON(c.Request, &patch, adminBodyLimit); err != nil {
		return err
	}
	for _, immutable := range []string{"id", "createdAt", "updatedAt", "secret"} {
		delete(patch, immutable)
	}
	// Merge the patch's members over the stored subscription (RFC 7396 at
	// the top level), then validate the result as a whole.
	next := *cur
	b, err := json.Marshal(patch)
	if err != nil {
		return fmt.Errorf("re-encode patch: %w", err)
	}
	if err := decodeJSON(requestWithBody(c, b), &next, adminBodyLimit); err != nil {
		return err
	}
	next.ID, next.CreatedAt, next.Secrets = cur.ID, cur.CreatedAt, cur.Secrets
	if err := s.checkSubscription(c, &next); err != nil {
		return err
	}
	if err := s.writeSubscription(c, &next); err != nil {
		return err
	}
	if err := s.withCircuits(c.Request.Context(), &next); err != nil {
		return err
	}
	c.JSON(http.StatusOK, &next)
	return nil
}

func (s *Server) setSubscriptionStatus(c *gin.Context, status subscription.Status) error {
	sub, err := s.cfg.Store.SubscriptionGetByID(c.Request.Context(), c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "subscription")
	}
	sub.Status = status
	if err := s.writeSubscription(c, sub); err != nil {
		return err
	}
	if status == subscription.StatusActive {
		s.resumed(c.Request.Context(), sub)
	}
	if err := s.withCircuits(c.Request.Context(), sub); err != nil {
		return err
	}
	c.JSON(http.StatusOK, sub)
	return nil
}

func (s *Server) pauseSubscription(c *gin.Context) error {
	return s.setSubscriptionStatus(c, subscription.StatusPaused)
}

func (s *Server) resumeSubscription(c *gin.Context) error {
	return s.setSubscriptionStatus(c, subscription.StatusActive)
}

func (s *Server) deleteSubscription(c *gin.Context) error {
	id := c.Param("id")
	if _, err := s.cfg.Store.SubscriptionGetByID(c.Request.Context(), id); err != nil {
		return s.notFoundOr(err, "subscription")
	}
	if err := s.cfg.Store.SubscriptionDelete(c.Request.Context(), id); err != nil {
		return s.notFoundOr(err, "subscription")
	}
	s.cfg.Subscriptions.Invalidate()
	if _, err := s.cfg.Jobs.CancelSubscription(c.Request.Context(), id, "subscription deleted"); err != nil {
		return err //nolint:wrapcheck // mapped by h
	}
	c.Status(http.StatusNoContent)
	return nil
}

func (s *Server) rotateSecret(c *gin.Context) error {
	sub, err := s.cfg.Store.SubscriptionGetByID(c.Request.Context(), c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "subscription")
	}
	now := s.now()
	expires := now.Add(secretOverlap)
	kept := []subscription.Secret{{Value: subscription.NewSecret()}}
	for _, old := range sub.Secrets {
		if old.ExpiresAt != nil && !old.ExpiresAt.After(now) {
			continue
		}
		if old.ExpiresAt == nil {
			old.ExpiresAt = &expires
		}
		kept = append(kept, old)
	}
	sub.Secrets = kept
	if err := s.writeSubscription(c, sub); err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"secret": kept[0].Value, "previousExpiresAt": formatTime(expires)})
	return nil
}

func (s *Server) getSecret(c *gin.Context) error {
	sub, err := s.cfg.Store.SubscriptionGetByID(c.Request.Context(), c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "subscription")
	}
	now := s.now()
	out := []subscription.Secret{}
	for _, sec := range sub.Secrets {
		if sec.ExpiresAt == nil || sec.ExpiresAt.After(now) {
			out = append(out, sec)
		}
	}
	c.JSON(http.StatusOK, gin.H{"secrets": out})
	return nil
}
