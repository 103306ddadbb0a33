package subscription

import (
	"context"
	"fmt"
	"time"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/health"
	"github.com/hooklane/hooklane/event/cloudevent"
)

// The endpoint health of API.md §12 as the Service shows it: the circuit
// of each push subscription it returns, and the health view of
// GET /api/subscriptions/{id}/health from the rolling aggregates (package
// health). The circuits themselves are moved by the job lifecycle
// (dispatch/circuit_lifecycle.go); the Service only reads them, and closes
// one through Jobs.ResetCircuit on resume.

// Health is the health view of one subscription (API.md §12).
type Health struct {
	// Subscription is the subscription's code.
	Subscription string `json:"subscription"`
	// Circuit is the subscription's circuit; nil (null) for a pull
	// subscription, which has none.
	Circuit       *dispatch.CircuitView `json:"circuit"`
	LastSuccessAt *cloudevent.Timestamp `json:"lastSuccessAt"`
	LastFailureAt *cloudevent.Timestamp `json:"lastFailureAt"`
	// LastError is the error of the attempt at LastFailureAt.
	LastError *string `json:"lastError"`
	// Windows are the 1 h and 24 h windows, in that order.
	Windows []health.Window `json:"windows"`
}

// WithCircuits sets the circuit view of each push subscription of subs as
// stored (read in one call) at now; a subscription with no stored circuit
// keeps nil, which renders CLOSED. Get, List, Patch, Pause and Resume call
// it on what they return; a caller that pages ListReceiving's result calls
// it on the page. It also sets the masked destination answers show.
func (s *Service) WithCircuits(ctx context.Context, subs ...*Subscription) error {
	return s.withCircuits(ctx, subs...)
}

func (s *Service) withCircuits(ctx context.Context, subs ...*Subscription) error {
	s.withDestinationViews(subs...) // destination.go: every answer shows it masked
	ids := make([]string, 0, len(subs))
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
		return fmt.Errorf("get circuits of %d subscriptions: %w", len(ids), err)
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

// Health returns the health view of a subscription: its circuit, its last
// success and failure, and the windows of health.Windows summarised from
// the per-minute aggregates (at most 24 × 60 of them are read; see package
// health for their precision).
func (s *Service) Health(ctx context.Context, id string) (*Health, error) {
	sub, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
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
		return nil, fmt.Errorf("get health of subscription %s: %w", sub.ID, err)
	}
	out := &Health{Subscription: sub.Code, Circuit: sub.Circuit, Windows: health.Summarize(buckets, now)}
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
	return out, nil
}
