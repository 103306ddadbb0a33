package api

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/cloudevent"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/health"
	"github.com/hooklane/hooklane/subscription"
)

// The endpoint health of API.md §12: the circuit of a subscription on its
// JSON, and GET /api/subscriptions/{id}/health from the rolling aggregates
// (package health).

// withCircuits sets the circuit view of each push subscription, as stored
// (read in one call), at now.
func (s *Server) withCircuits(ctx context.Context, subs ...*subscription.Subscription) error {
	var ids []string
	for _, sub := range subs {
		if sub.Delivery != dispatch.DeliveryPull {
			ids = append(ids, sub.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	stored, err := s.cfg.Store.CircuitGetMany(ctx, ids)
	if err != nil {
		return err //nolint:wrapcheck // mapped by h
	}
	byID := make(map[string]*dispatch.Circuit, len(stored))
	for _, c := range stored {
		byID[c.SubscriptionID] = c
	}
	now := s.now()
	for _, sub := range subs {
		if c, ok := byID[sub.ID]; ok && sub.Delivery != dispatch.DeliveryPull {
			v := c.View(now)
			sub.Circuit = &v
		}
	}
	return nil
}

// resumed carries an operator's resume on (API.md §3, §12): the
// subscription's circuit closes, releasing the jobs it held, and the jobs
// parked while paused go out now. A failure is logged: the safety polls
// release them later.
func (s *Server) resumed(ctx context.Context, sub *subscription.Subscription) {
	if err := s.cfg.Jobs.ResetCircuit(ctx, sub.ID, sub.Code); err != nil {
		s.cfg.Logger.WarnContext(ctx, "close circuit on resume failed", "subscription_id", sub.ID, "error", err)
	}
	if _, err := s.cfg.Jobs.ReleaseSubscription(ctx, sub.ID); err != nil {
		s.cfg.Logger.WarnContext(ctx, "release paused jobs failed", "subscription_id", sub.ID, "error", err)
	}
}

// healthView is the answer of GET /api/subscriptions/{id}/health.
type healthView struct {
	Subscription  string                `json:"subscription"`
	Circuit       *dispatch.CircuitView `json:"circuit"`
	LastSuccessAt *cloudevent.Timestamp `json:"lastSuccessAt"`
	LastFailureAt *cloudevent.Timestamp `json:"lastFailureAt"`
	LastError     *string               `json:"lastError"`
	Windows       []health.Window       `json:"windows"`
}

func (s *Server) getSubscriptionHealth(c *gin.Context) error {
	ctx := c.Request.Context()
	sub, err := s.cfg.Store.SubscriptionGetByID(ctx, c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "subscription")
	}
	if err := s.withCircuits(ctx, sub); err != nil {
		return err
	}
	now := s.now()
	var since time.Time
	for _, w := range health.Windows() {
		if t := health.Since(now, w.Span); since.IsZero() || t.Before(since) {
			since = t
		}
	}
	last, buckets, err := s.cfg.Store.HealthGet(ctx, sub.ID, since)
	if err != nil {
		return err //nolint:wrapcheck // mapped by h
	}
	out := healthView{Subscription: sub.Code, Circuit: sub.Circuit, Windows: health.Summarize(buckets, now)}
	if out.Circuit == nil && sub.Delivery != dispatch.DeliveryPull {
		out.Circuit = &dispatch.CircuitView{State: dispatch.CircuitClosed}
	}
	if last != nil {
		out.LastSuccessAt = cloudevent.TimestampPtr(last.LastSuccessAt)
		out.LastFailureAt = cloudevent.TimestampPtr(last.LastFailureAt)
		if last.LastFailureAt != nil {
			out.LastError = &last.LastError
		}
	}
	c.JSON(http.StatusOK, out)
	return nil
}
