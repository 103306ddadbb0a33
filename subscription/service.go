package subscription

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hooklane/hooklane/destination"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/health"
	"github.com/hooklane/hooklane/dispatch/pool"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/store"
)

// SecretOverlap is how long a rotated-out secret keeps signing, so
// receivers can switch to the new one without losing deliveries.
const SecretOverlap = 24 * time.Hour

// cancelReason is the reason recorded on the jobs a delete cancels.
const cancelReason = "subscription deleted"

// ServiceStore is what the Service needs of the store.
type ServiceStore interface {
	SubscriptionInsert(ctx context.Context, s *Subscription) error
	SubscriptionGetByID(ctx context.Context, id string) (*Subscription, error)
	SubscriptionList(ctx context.Context, p *ListParams) (*Page, error)
	SubscriptionUpdate(ctx context.Context, s *Subscription) error
	SubscriptionDelete(ctx context.Context, id string) error
	PoolGetByID(ctx context.Context, id string) (*pool.Pool, error)
	// CircuitGetMany returns the stored circuits of the given
	// subscriptions (dispatch.CircuitStore).
	CircuitGetMany(ctx context.Context, subscriptionIDs []string) ([]*dispatch.Circuit, error)
	// HealthGet returns the last success and failure of a subscription and
	// its per-minute aggregates since a time (health.Store).
	HealthGet(ctx context.Context, subscriptionID string, since time.Time) (*health.Last, []health.Bucket, error)
}

// Jobs is the part of the job lifecycle (*dispatch.Lifecycle) that follows
// a subscription's changes.
type Jobs interface {
	// ReleaseSubscription queues the subscription's jobs parked while it
	// was paused.
	ReleaseSubscription(ctx context.Context, subscriptionID string) (int, error)
	// CancelSubscription cancels the subscription's unfinished jobs.
	CancelSubscription(ctx context.Context, subscriptionID, reason string) (int, error)
	// ResetCircuit closes the subscription's circuit (an operator's
	// resume, API.md §12) and releases the jobs it held.
	ResetCircuit(ctx context.Context, subscriptionID, code string) error
}

// ServiceConfig configures a Service.
type ServiceConfig struct {
	// Store holds subscriptions and dispatch pools. Required.
	Store ServiceStore
	// Jobs releases and cancels a subscription's jobs. Required.
	Jobs Jobs
	// PublicHostFunc reports whether a target host resolves only to public
	// addresses (false, nil when one is loopback, private or otherwise not
	// public; an error when it cannot be resolved). In production it wraps
	// webhook.CheckTarget, which cannot be called directly: webhook
	// imports this package. Nil skips the check (private targets allowed).
	PublicHostFunc func(ctx context.Context, host string) (bool, error)
	// Destinations are the message-broker types a subscription may deliver
	// to (API.md §15). It decodes, validates and masks destinations; the
	// broker addresses pass PublicHostFunc as a target's host does. Nil
	// refuses every destination.
	Destinations *destination.Registry
	// OnChangeFunc is called after every stored change, so this instance's
	// matching sees it at once (the Cache's Invalidate in production).
	// Nil calls nothing.
	OnChangeFunc func()
	// NewIDFunc returns the id of a new subscription. Required.
	NewIDFunc func() string
	// Logger logs what the Service handles itself (a failed release of
	// parked jobs). Nil discards.
	Logger *slog.Logger
	// NowFunc is the clock; nil is time.Now. Timestamps are kept in UTC
	// to the millisecond.
	NowFunc func() time.Time
}

// Service is the lifecycle of subscriptions (API.md §3): create with
// defaults and validation, patch, pause and resume, delete with its
// cascade to the subscription's jobs, and secret rotation; and their
// endpoint health (API.md §12, health.go): every subscription it returns
// carries its circuit, and resume closes the circuit.
//
// Errors: a *Rejection for a subscription or secret that breaks a rule
// (pointers into the request body), a *Conflict when another subscription
// of the client has the code, an error wrapping store.ErrNotFound when the
// subscription does not exist, anything else for store failures. It is
// safe for concurrent use; two writers of one subscription race and the
// last write wins, as PATCH semantics allow.
type Service struct {
	cfg ServiceConfig
}

// NewService returns a Service. It panics when a required field is
// missing: that is a wiring mistake.
func NewService(cfg ServiceConfig) *Service {
	if cfg.Store == nil || cfg.Jobs == nil || cfg.NewIDFunc == nil {
		panic("subscription: NewService needs a Store, Jobs and a NewIDFunc")
	}
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.OnChangeFunc == nil {
		cfg.OnChangeFunc = func() {}
	}
	return &Service{cfg: cfg}
}

func (s *Service) now() time.Time { return s.cfg.NowFunc().UTC().Truncate(time.Millisecond) }

// Check validates sub as Validate does and checks what the store and the
// network must confirm: its dispatch pool exists and its target's host is
// public, and so is the host of its OAuth 2.0 tokenUrl. Every problem is
// reported at once, as a *Rejection, except the address checks, which run
// only on an otherwise valid subscription (they may wait for DNS).
func (s *Service) Check(ctx context.Context, sub *Subscription) error {
	return s.check(ctx, sub, nil, nil)
}

// check is Check with problems found before it, extra, reported with the
// subscription's own (a PATCH's stored secrets sent to a new place), and
// the destination stored before a PATCH (nil on create), whose secrets a
// "***" keeps. A valid destination is left in sub in its stored form.
func (s *Service) check(ctx context.Context, sub *Subscription, extra []FieldError, stored *destination.Destination) error {
	sub.normalizeTransformation()
	sub.normalizeDestination()
	errs := append(sub.Validate(), extra...)
	dest, destErrs, err := s.decodeDestination(sub, stored) // destination.go
	if err != nil {
		return err
	}
	errs = append(errs, destErrs...)
	if sub.DispatchPoolID != nil && *sub.DispatchPoolID != "" {
		_, err := s.cfg.Store.PoolGetByID(ctx, *sub.DispatchPoolID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			errs = append(errs, FieldError{Pointer: "/dispatchPoolId", Message: "no dispatch pool has this id"})
		case err != nil:
			return fmt.Errorf("get dispatch pool %s: %w", *sub.DispatchPoolID, err)
		}
	}
	if len(errs) == 0 && sub.Target != "" && s.cfg.PublicHostFunc != nil {
		if msg := s.checkTarget(ctx, sub.Target); msg != "" {
			errs = append(errs, FieldError{Pointer: "/target", Message: msg})
		}
	}
	if len(errs) == 0 && sub.Auth != nil && sub.Auth.TokenURL != "" && s.cfg.PublicHostFunc != nil {
		// The token endpoint is called by the gateway as the target is
		// (API.md §14), so it passes the same check.
		if msg := s.checkTarget(ctx, sub.Auth.TokenURL); msg != "" {
			errs = append(errs, FieldError{Pointer: "/auth/tokenUrl", Message: msg})
		}
	}
	if len(errs) == 0 && dest != nil {
		addrErrs, err := s.checkDestinationAddresses(ctx, dest)
		if err != nil {
			return err
		}
		errs = append(errs, addrErrs...)
	}
	if len(errs) > 0 {
		return &Rejection{Detail: rejectionDetail(errs), Errors: errs}
	}
	return nil
}

// checkTarget returns why target may not be delivered to, "" when it may.
func (s *Service) checkTarget(ctx context.Context, target string) string {
	u, err := url.Parse(target)
	if err != nil {
		return "is not a valid URL"
	}
	public, err := s.cfg.PublicHostFunc(ctx, u.Hostname())
	switch {
	case err != nil:
		return "host could not be resolved"
	case !public:
		return "resolves to a loopback, private or otherwise non-public address"
	}
	return ""
}

// Create checks and stores a new subscription, giving it an id, its
// timestamps and its first signing secret: secret when not nil (it must be
// "whsec_" and base64), a fresh one otherwise. sub is the request as
// decoded over a Subscription with ApplyDefaults applied, so explicit
// zeros are kept and checked. It returns the secret, which is shown only
// this once.
func (s *Service) Create(ctx context.Context, sub *Subscription, secret *string) (string, error) {
	now := s.now()
	sub.ID = s.cfg.NewIDFunc()
	sub.CreatedAt, sub.UpdatedAt = now, now
	if err := s.Check(ctx, sub); err != nil {
		return "", err
	}
	value := NewSecret()
	if secret != nil {
		if _, err := SecretKey(*secret); err != nil {
			return "", &Rejection{Detail: "the secret is invalid", Errors: []FieldError{{Pointer: "/secret", Message: err.Error()}}}
		}
		value = *secret
	}
	sub.Secrets = []Secret{{Value: value}}
	if err := s.cfg.Store.SubscriptionInsert(ctx, sub); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return "", codeConflict(sub)
		}
		return "", fmt.Errorf("insert subscription %s: %w", sub.ID, err)
	}
	s.cfg.OnChangeFunc()
	return value, nil
}

func codeConflict(sub *Subscription) *Conflict {
	return &Conflict{Detail: fmt.Sprintf("a subscription with code %q exists for this client", sub.Code)}
}

// Get returns one subscription, with its circuit.
func (s *Service) Get(ctx context.Context, id string) (*Subscription, error) {
	sub, err := s.get(ctx, id)
	if err != nil {
		return nil, err
	}
	return sub, s.withCircuits(ctx, sub)
}

// get returns one subscription as stored (no circuit).
func (s *Service) get(ctx context.Context, id string) (*Subscription, error) {
	sub, err := s.cfg.Store.SubscriptionGetByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("get subscription %s: %w", id, err)
	}
	return sub, nil
}

// List returns one page of subscriptions, newest first, filtered as p
// says (an eventType filter keeps bindings equal to it), with their
// circuits.
func (s *Service) List(ctx context.Context, p *ListParams) (*Page, error) {
	pg, err := s.list(ctx, p)
	if err != nil {
		return nil, err
	}
	return pg, s.withCircuits(ctx, pg.Subscriptions...)
}

func (s *Service) list(ctx context.Context, p *ListParams) (*Page, error) {
	pg, err := s.cfg.Store.SubscriptionList(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("list subscriptions: %w", err)
	}
	return pg, nil
}

// ListReceiving returns every subscription that receives events of type
// p.EventType when it is an exact code (one with a binding equal to it or
// with a pattern matching it; a pattern keeps the bindings equal to it, as
// List does) and is of kind p.DestinationType when set (see
// CheckDestinationType). p's other filters hold; its Limit and Cursor are
// ignored (the caller pages the result, then calls WithCircuits on the
// page).
func (s *Service) ListReceiving(ctx context.Context, p *ListParams) ([]*Subscription, error) {
	if err := s.CheckDestinationType(p.DestinationType); err != nil {
		return nil, err
	}
	q := *p
	exact := p.EventType != "" && !strings.Contains(p.EventType, "*")
	if exact {
		q.EventType = ""
	}
	q.Limit, q.Cursor = listPageSize, ""
	var out []*Subscription
	for {
		pg, err := s.list(ctx, &q)
		if err != nil {
			return nil, err
		}
		for _, sub := range pg.Subscriptions {
			if (!exact || sub.receives(p.EventType)) && sub.isKind(p.DestinationType) {
				out = append(out, sub)
			}
		}
		if pg.NextCursor == "" || pg.NextCursor == q.Cursor {
			return out, nil
		}
		q.Cursor = pg.NextCursor
	}
}

// listPageSize is the page ListReceiving reads the store by (the store's
// largest).
const listPageSize = 500

// receives reports whether a binding of sub is code or a pattern matching
// it.
func (sub *Subscription) receives(code string) bool {
	for _, b := range sub.EventTypes {
		if event.MatchTypePattern(b.EventTypeCode, code) {
			return true
		}
	}
	return false
}

// Patch changes a subscription: merge edits a copy of the stored one (the
// API decodes an RFC 7396 merge patch onto it; an error of merge is
// returned as it is), then the fields a client cannot change (id,
// createdAt, the secrets) are restored, the result is checked as Create
// checks a new one, and stored. An `auth` or `tls` in the patch replaces
// the stored one as a whole, and a secret in it sent as "***" keeps the
// stored value — unless the patch changes where that secret goes (the
// target, the OAuth 2.0 tokenUrl, or for the TLS client key the target's
// host or port): then the secret must be given again, and "***" or an
// absent `auth` (`tls`) is refused at the secret's pointer (endpoint.go).
//
// The merge runs on the stored subscription as read; when another write
// came before this one (an auto-disable, another instance's change), it
// runs again on a fresh read (see update).
func (s *Service) Patch(ctx context.Context, id string, merge func(*Subscription) error) (*Subscription, error) {
	next, err := s.update(ctx, id, func(cur *Subscription) (*Subscription, error) {
		next := *cur
		next.Transformation = CloneTransformation(cur.Transformation) // the merge decodes into it
		next.Destination = slices.Clone(cur.Destination)              // so does it, in place
		ep := beginEndpointPatch(&next)
		if err := merge(&next); err != nil {
			return nil, err
		}
		moved := ep.finish(&next, cur)
		next.ID, next.CreatedAt, next.Secrets, next.Version = cur.ID, cur.CreatedAt, cur.Secrets, cur.Version
		if err := s.check(ctx, &next, moved, s.storedDestination(cur)); err != nil {
			return nil, err
		}
		return &next, nil
	})
	if err != nil {
		return nil, err
	}
	return next, s.withCircuits(ctx, next)
}

// updateAttempts bounds how often update reads and applies a change again
// when another write came between its read and its write.
const updateAttempts = 5

// update reads subscription id, applies change to what it read and stores
// the result if the subscription is still as read (its version); when
// another write came between (an auto-disable, another instance's change,
// store.ErrStale), it starts again from a fresh read, so that no write puts
// back what it did not see. Past updateAttempts the store.ErrStale is
// returned.
func (s *Service) update(ctx context.Context, id string, change func(cur *Subscription) (*Subscription, error)) (*Subscription, error) {
	for attempt := 1; ; attempt++ {
		cur, err := s.get(ctx, id)
		if err != nil {
			return nil, err
		}
		next, err := change(cur)
		if err != nil {
			return nil, err
		}
		err = s.write(ctx, next)
		if errors.Is(err, store.ErrStale) && attempt < updateAttempts {
			continue
		}
		if err != nil {
			return nil, err
		}
		return next, nil
	}
}

// write stores a changed subscription and reports the change, so it
// applies to the next event on this instance. An ACTIVE subscription has
// no statusReason (only the gateway's disabling sets one).
func (s *Service) write(ctx context.Context, sub *Subscription) error {
	sub.UpdatedAt = s.now()
	if sub.Status == StatusActive {
		sub.StatusReason = nil
	}
	if err := s.cfg.Store.SubscriptionUpdate(ctx, sub); err != nil {
		if errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrStale) {
			return codeConflict(sub)
		}
		return fmt.Errorf("update subscription %s: %w", sub.ID, err)
	}
	s.cfg.OnChangeFunc()
	return nil
}

func (s *Service) setStatus(ctx context.Context, id string, status Status) (*Subscription, error) {
	return s.update(ctx, id, func(cur *Subscription) (*Subscription, error) {
		cur.Status = status
		return cur, nil
	})
}

// Pause stops a subscription from matching new events; its jobs that come
// due meanwhile are parked.
func (s *Service) Pause(ctx context.Context, id string) (*Subscription, error) {
	sub, err := s.setStatus(ctx, id, StatusPaused)
	if err != nil {
		return nil, err
	}
	return sub, s.withCircuits(ctx, sub)
}

// Resume makes a subscription match again (clearing the statusReason of
// a gateway's disabling), closes its circuit, releasing the jobs the
// circuit held, and queues the jobs parked while it was paused (API.md
// §3, §12). A failed reset or release is logged, not returned: the
// subscription is ACTIVE, and the pending poller releases the jobs later.
func (s *Service) Resume(ctx context.Context, id string) (*Subscription, error) {
	sub, err := s.setStatus(ctx, id, StatusActive)
	if err != nil {
		return nil, err
	}
	if err := s.cfg.Jobs.ResetCircuit(ctx, id, sub.Code); err != nil {
		s.cfg.Logger.WarnContext(ctx, "close circuit on resume failed", "subscription_id", id, "error", err)
	}
	if _, err := s.cfg.Jobs.ReleaseSubscription(ctx, id); err != nil {
		s.cfg.Logger.WarnContext(ctx, "release paused jobs failed", "subscription_id", id, "error", err)
	}
	return sub, s.withCircuits(ctx, sub)
}

// Delete removes a subscription and then cancels its unfinished jobs.
func (s *Service) Delete(ctx context.Context, id string) error {
	if _, err := s.get(ctx, id); err != nil {
		return err
	}
	if err := s.cfg.Store.SubscriptionDelete(ctx, id); err != nil {
		return fmt.Errorf("delete subscription %s: %w", id, err)
	}
	s.cfg.OnChangeFunc()
	if _, err := s.cfg.Jobs.CancelSubscription(ctx, id, cancelReason); err != nil {
		return fmt.Errorf("cancel jobs of deleted subscription %s: %w", id, err)
	}
	return nil
}

// RotateSecret gives a subscription a fresh signing secret. The secrets
// it had keep signing for SecretOverlap (an expiry already set stays, an
// expired secret is dropped). It returns the new secret and when the
// previous ones stop signing.
func (s *Service) RotateSecret(ctx context.Context, id string) (secret string, previousExpiresAt time.Time, err error) {
	var expires time.Time
	sub, err := s.update(ctx, id, func(cur *Subscription) (*Subscription, error) {
		now := s.now()
		expires = now.Add(SecretOverlap)
		kept := []Secret{{Value: NewSecret()}}
		for _, old := range cur.Secrets {
			if old.ExpiresAt != nil && !old.ExpiresAt.After(now) {
				continue
			}
			if old.ExpiresAt == nil {
				old.ExpiresAt = &expires
			}
			kept = append(kept, old)
		}
		cur.Secrets = kept
		return cur, nil
	})
	if err != nil {
		return "", time.Time{}, err
	}
	return sub.Secrets[0].Value, expires, nil
}

// Secrets returns the secrets that sign a subscription's deliveries now:
// the current one first, then those rotated out less than SecretOverlap
// ago.
func (s *Service) Secrets(ctx context.Context, id string) ([]Secret, error) {
	sub, err := s.get(ctx, id)
	if err != nil {
		return nil, err
	}
	now := s.now()
	out := []Secret{}
	for _, sec := range sub.Secrets {
		if sec.ExpiresAt == nil || sec.ExpiresAt.After(now) {
			out = append(out, sec)
		}
	}
	return out, nil
}
