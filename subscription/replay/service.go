package replay

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
)

// Subscriptions reads the subscription a replay serves.
type Subscriptions interface {
	// Get returns one subscription (an error matching store.ErrNotFound
	// when it does not exist).
	Get(ctx context.Context, id string) (*subscription.Subscription, error)
}

// ServiceConfig configures a Service.
type ServiceConfig struct {
	// Store holds the replays. Required.
	Store Store
	// Subscriptions reads the replayed subscription. Required.
	Subscriptions Subscriptions
	// IDs issues replay and status event ids. Required.
	IDs *idgen.Generator
	// Retention is how long events are kept (HOOKLANE_EVENT_RETENTION): a
	// replay may not start before now − Retention. 0: no bound.
	Retention time.Duration
	// MaxPerSubscription bounds the RUNNING replays of one subscription
	// (HOOKLANE_MAX_REPLAYS_PER_SUBSCRIPTION): a start past it is a
	// *LimitError of 409. Default MaxPerSubscriptionDefault; < 0: no bound.
	MaxPerSubscription int
	// MaxPerClient bounds the RUNNING replays of one client's subscriptions
	// (the platform's anchor-level ones count as one client)
	// (HOOKLANE_MAX_REPLAYS_PER_CLIENT): a start past it is a *LimitError of
	// 429. Default MaxPerClientDefault; < 0: no bound.
	MaxPerClient int
	// WakeFunc, when set, is called after a replay is stored, to let the
	// local Worker take it at once instead of at its next poll.
	WakeFunc func()
	// NowFunc is the clock. Default time.Now.
	NowFunc func() time.Time
	Logger  *slog.Logger
}

// Bounds of a replay request and of the replays that run at once.
const (
	// EventTypesMax bounds the eventTypes patterns of one replay (each is
	// matched against every event replayed).
	EventTypesMax = 50
	// EventTypeMaxBytes bounds one eventTypes pattern.
	EventTypeMaxBytes = 255
	// UntilSkew is how far in the future until may lie (clocks of the
	// caller and the gateway differ a little); until defaults to now.
	UntilSkew = time.Minute
	// MaxPerSubscriptionDefault is the default of
	// ServiceConfig.MaxPerSubscription.
	MaxPerSubscriptionDefault = 1
	// MaxPerClientDefault is the default of ServiceConfig.MaxPerClient.
	MaxPerClientDefault = 5
)

// LimitError refuses a replay because too many already run: Status is 409
// (one of the same subscription runs: wait for it, or cancel it) or 429
// (the client's bound).
type LimitError struct {
	Status int
	Detail string
}

func (e *LimitError) Error() string { return e.Detail }

// Service starts replays and reads them; a Worker runs them.
type Service struct {
	cfg ServiceConfig
}

// NewService returns a Service.
func NewService(cfg ServiceConfig) *Service {
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxPerSubscription == 0 {
		cfg.MaxPerSubscription = MaxPerSubscriptionDefault
	}
	if cfg.MaxPerClient == 0 {
		cfg.MaxPerClient = MaxPerClientDefault
	}
	cfg.Logger = cfg.Logger.With("component", "replay")
	return &Service{cfg: cfg}
}

// StartParams are the arguments of Start (the body of POST
// /api/subscriptions/{id}/replay).
type StartParams struct {
	// Since is required; Until defaults to now.
	Since, Until time.Time
	// EventTypes narrows the replay (codes or patterns); empty for none.
	EventTypes []string
	Redeliver  bool
}

// Start records a RUNNING replay of the subscription and emits
// replay.started; a Worker then runs it. It returns a *Rejection for
// parameters that break a rule and an error matching store.ErrNotFound when
// the subscription does not exist.
func (s *Service) Start(ctx context.Context, subscriptionID string, p *StartParams) (*Replay, error) {
	sub, err := s.cfg.Subscriptions.Get(ctx, subscriptionID)
	if err != nil {
		return nil, fmt.Errorf("start replay: %w", err)
	}
	now := s.cfg.NowFunc().UTC().Truncate(time.Millisecond)
	until := p.Until
	if until.IsZero() {
		until = now
	}
	if err := s.check(p, until, now); err != nil {
		return nil, err
	}
	if err := s.checkRunning(ctx, sub); err != nil {
		return nil, err
	}
	r := &Replay{
		ID: s.cfg.IDs.New(), SubscriptionID: sub.ID, Subscription: sub.Code, ClientID: sub.ClientID,
		Status: StatusRunning, Since: p.Since.UTC().Truncate(time.Millisecond), Until: until.UTC().Truncate(time.Millisecond),
		EventTypes: p.EventTypes, Redeliver: p.Redeliver, CreatedAt: now, UpdatedAt: now,
	}
	if err := s.cfg.Store.ReplayInsert(ctx, r); err != nil {
		return nil, fmt.Errorf("store replay: %w", err)
	}
	if err := s.cfg.Store.StatusEventInsertMany(ctx, []stream.Event{statusEvent(s.cfg.IDs.New(), stream.TypeReplayStarted, r, now)}); err != nil {
		// The replay runs anyway; only the stream misses its start.
		s.cfg.Logger.WarnContext(ctx, "store replay.started", "replay_id", r.ID, "error", err)
	}
	s.cfg.Logger.InfoContext(ctx, "replay started", "replay_id", r.ID, "subscription_id", sub.ID,
		"since", r.Since, "until", r.Until, "redeliver", r.Redeliver)
	if s.cfg.WakeFunc != nil {
		s.cfg.WakeFunc()
	}
	return r, nil
}

// check validates the start parameters (API.md §13).
func (s *Service) check(p *StartParams, until, now time.Time) error {
	var errs []FieldError
	switch {
	case p.Since.IsZero():
		errs = append(errs, FieldError{Pointer: "/since", Message: "is required"})
	case s.cfg.Retention > 0 && p.Since.Before(now.Add(-s.cfg.Retention)):
		errs = append(errs, FieldError{Pointer: "/since", Message: "is older than the event retention (" + s.cfg.Retention.String() + "): those events are gone"})
	case !until.After(p.Since):
		errs = append(errs, FieldError{Pointer: "/until", Message: "must be after since"})
	case until.After(now.Add(UntilSkew)):
		errs = append(errs, FieldError{Pointer: "/until", Message: "must not be in the future (more than " + UntilSkew.String() + " ahead)"})
	}
	if len(p.EventTypes) > EventTypesMax {
		errs = append(errs, FieldError{Pointer: "/eventTypes", Message: "at most " + strconv.Itoa(EventTypesMax) + " patterns are allowed"})
		return &Rejection{Detail: "the replay cannot start as asked", Errors: errs}
	}
	for i, code := range p.EventTypes {
		if len(code) > EventTypeMaxBytes {
			errs = append(errs, FieldError{Pointer: "/eventTypes/" + strconv.Itoa(i), Message: "must be at most " + strconv.Itoa(EventTypeMaxBytes) + " bytes"})
			continue
		}
		if err := event.ValidateTypePattern(code); err != nil {
			errs = append(errs, FieldError{Pointer: "/eventTypes/" + strconv.Itoa(i), Message: err.Error()})
		}
	}
	if len(errs) > 0 {
		return &Rejection{Detail: "the replay cannot start as asked", Errors: errs}
	}
	return nil
}

// checkRunning refuses a replay of sub when MaxPerSubscription replays of
// it, or MaxPerClient replays of its client, are RUNNING: it reads the
// replays newest first and stops as soon as a bound is reached. Two starts
// at the same instant may both pass (the count and the insert are two
// writes): the bound holds up to such a race.
func (s *Service) checkRunning(ctx context.Context, sub *subscription.Subscription) error {
	perSub, perClient := s.cfg.MaxPerSubscription, s.cfg.MaxPerClient
	if perSub < 0 && perClient < 0 {
		return nil
	}
	clientOf := func(id *string) string {
		if id == nil {
			return ""
		}
		return *id
	}
	client := clientOf(sub.ClientID)
	nSub, nClient := 0, 0
	p := &ListParams{Limit: 500}
	for {
		pg, err := s.cfg.Store.ReplayList(ctx, p)
		if err != nil {
			return fmt.Errorf("count running replays: %w", err)
		}
		for _, r := range pg.Replays {
			if r.Status != StatusRunning {
				continue
			}
			if r.SubscriptionID == sub.ID {
				nSub++
			}
			if clientOf(r.ClientID) == client {
				nClient++
			}
			if perSub >= 0 && nSub >= perSub {
				return &LimitError{Status: http.StatusConflict, Detail: fmt.Sprintf(
					"a replay of this subscription is already running (at most %d at once): wait for it to end", perSub)}
			}
			if perClient >= 0 && nClient >= perClient {
				return &LimitError{Status: http.StatusTooManyRequests, Detail: fmt.Sprintf(
					"%d replays of this client are running, the most allowed at once: wait for one to end", perClient)}
			}
		}
		if pg.NextCursor == "" {
			return nil
		}
		p.Cursor = pg.NextCursor
	}
}

// Get returns one replay (an error matching store.ErrNotFound when there
// is none).
func (s *Service) Get(ctx context.Context, id string) (*Replay, error) {
	r, err := s.cfg.Store.ReplayGetByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("get replay %s: %w", id, err)
	}
	return r, nil
}

// List returns one page of replays, newest first.
func (s *Service) List(ctx context.Context, p *ListParams) (*Page, error) {
	pg, err := s.cfg.Store.ReplayList(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("list replays: %w", err)
	}
	return pg, nil
}

// statusEvent is a replay.* status event about r.
func statusEvent(id, typ string, r *Replay, now time.Time) stream.Event {
	scanned, matched, created := r.Scanned, r.Matched, r.Created
	return stream.Event{
		ID: id, Type: typ, Time: now, Subject: r.ID,
		Data: stream.Data{
			Subscription: r.Subscription, Status: string(r.Status), Error: r.Error,
			Scanned: &scanned, Matched: &matched, Created: &created,
		},
	}
}

// Rejection is a replay the Service refuses as asked (the API answers
// 422): Errors locate each problem in the request body.
type Rejection struct { //nolint:errname // read as replay.Rejection, answered as 422; the name says what it is
	Detail string
	Errors []FieldError
}

func (e *Rejection) Error() string {
	if len(e.Errors) == 0 {
		return e.Detail
	}
	return e.Detail + ": " + e.Errors[0].Pointer + " " + e.Errors[0].Message
}

// FieldError is one problem of a rejected request: a JSON pointer into the
// body and what is wrong there.
type FieldError struct {
	Pointer string
	Message string
}
