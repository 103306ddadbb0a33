package tenant

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/subscription"
)

// Token settings (API.md §11).
const (
	// TokenPrefix starts every issued token.
	TokenPrefix = "hlt_"
	// TTLDefault is the lifetime of a token issued without ttlSeconds.
	TTLDefault = time.Hour
	// TTLShortest and TTLLongest bound ttlSeconds.
	TTLShortest = time.Minute
	TTLLongest  = 30 * 24 * time.Hour
	// tokenBytes is the entropy of a token.
	tokenBytes = 32
)

// Subscriptions is what the Service needs of the subscription service
// (*subscription.Service): a client's subscriptions, and their deletion with
// its cascade to their jobs.
type Subscriptions interface {
	List(ctx context.Context, p *subscription.ListParams) (*subscription.Page, error)
	Delete(ctx context.Context, id string) error
}

// Jobs is what the Service needs of the job lifecycle (*dispatch.Lifecycle):
// queuing the jobs parked while a client was suspended.
type Jobs interface {
	ReleaseSubscription(ctx context.Context, subscriptionID string) (int, error)
}

// ServiceConfig configures a Service.
type ServiceConfig struct {
	// Store holds clients and tokens. Required.
	Store Store
	// Subscriptions deletes a deleted client's subscriptions. Required.
	Subscriptions Subscriptions
	// Jobs releases a reactivated client's parked jobs. Required.
	Jobs Jobs
	// NewIDFunc returns the id of a new token. Required.
	NewIDFunc func() string
	// Logger logs what the Service handles itself. Nil discards.
	Logger *slog.Logger
	// NowFunc is the clock; nil is time.Now.
	NowFunc func() time.Time
}

// Service is the lifecycle of clients (API.md §11) and their tokens.
//
// Errors: a *Rejection for input that breaks a rule, a *Conflict for an id
// that is taken, an error wrapping store.ErrNotFound for a missing client
// or token, an *Unauthorized from Authenticate; anything else is a store
// failure. It is safe for concurrent use.
type Service struct {
	cfg ServiceConfig
}

// NewService returns a Service. It panics when a required field is missing:
// that is a wiring mistake.
func NewService(cfg ServiceConfig) *Service {
	if cfg.Store == nil || cfg.Subscriptions == nil || cfg.Jobs == nil || cfg.NewIDFunc == nil {
		panic("client: NewService needs a Store, Subscriptions, Jobs and a NewIDFunc")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	cfg.Logger = cfg.Logger.With("component", "client")
	return &Service{cfg: cfg}
}

func (s *Service) now() time.Time { return s.cfg.NowFunc().UTC().Truncate(time.Millisecond) }

// Validate checks a client's fields; the first problem is returned as a
// *Rejection pointing into the request body.
func (c *Client) Validate() error {
	switch {
	case !ValidID(c.ID):
		return reject("/id", "id must match [A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
	case strings.TrimSpace(c.Name) == "":
		return reject("/name", "name is required")
	case utf8.RuneCountInString(c.Name) > NameMaxLength:
		return reject("/name", "name is longer than %d characters", NameMaxLength)
	case utf8.RuneCountInString(c.Description) > DescriptionMaxLength:
		return reject("/description", "description is longer than %d characters", DescriptionMaxLength)
	case len(c.Metadata) > MetadataMaxEntries:
		return reject("/metadata", "metadata has more than %d entries", MetadataMaxEntries)
	case c.Status != StatusActive && c.Status != StatusSuspended:
		return reject("/status", "status must be ACTIVE or SUSPENDED")
	}
	for k, v := range c.Metadata {
		if k == "" || len(k) > MetadataValueMaxLength || len(v) > MetadataValueMaxLength {
			return reject("/metadata/"+escapePointer(k),
				"metadata keys must be 1 to %d bytes and values at most %d", MetadataValueMaxLength, MetadataValueMaxLength)
		}
	}
	return nil
}

// escapePointer escapes a JSON pointer reference token (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// Create stores a new ACTIVE client.
func (s *Service) Create(ctx context.Context, c *Client) error {
	if c.Status == "" {
		c.Status = StatusActive
	}
	if c.Metadata == nil {
		c.Metadata = map[string]string{}
	}
	if err := c.Validate(); err != nil {
		return err
	}
	now := s.now()
	c.CreatedAt, c.UpdatedAt = now, now
	if err := s.cfg.Store.ClientInsert(ctx, c); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return &Conflict{Detail: fmt.Sprintf("a client with id %q exists", c.ID)}
		}
		return fmt.Errorf("insert client %s: %w", c.ID, err)
	}
	s.cfg.Logger.InfoContext(ctx, "client created", "client_id", c.ID)
	return nil
}

// Get returns one client.
func (s *Service) Get(ctx context.Context, id string) (*Client, error) {
	c, err := s.cfg.Store.ClientGetByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("get client %s: %w", id, err)
	}
	return c, nil
}

// List returns one page of clients, in id order.
func (s *Service) List(ctx context.Context, p *ListParams) (*Page, error) {
	pg, err := s.cfg.Store.ClientList(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("list clients: %w", err)
	}
	return pg, nil
}

// Patch applies merge to the stored client, validates and stores the
// result. The id and timestamps cannot change. A client that goes from
// SUSPENDED to ACTIVE gets the jobs parked meanwhile queued.
func (s *Service) Patch(ctx context.Context, id string, merge func(*Client) error) (*Client, error) {
	c, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	was := c.Status
	next := *c
	if err := merge(&next); err != nil {
		return nil, err
	}
	next.ID, next.CreatedAt = c.ID, c.CreatedAt
	if next.Metadata == nil {
		next.Metadata = map[string]string{}
	}
	if err := next.Validate(); err != nil {
		return nil, err
	}
	next.UpdatedAt = s.now()
	if err := s.cfg.Store.ClientUpdate(ctx, &next); err != nil {
		return nil, fmt.Errorf("update client %s: %w", id, err)
	}
	if was != next.Status {
		s.cfg.Logger.InfoContext(ctx, "client status changed", "client_id", id, "from", was, "to", next.Status)
	}
	if was == StatusSuspended && next.Status == StatusActive {
		s.release(ctx, id)
	}
	return &next, nil
}

// release queues the jobs of a reactivated client's subscriptions that were
// parked while it was suspended. A failure is logged: the pending poller
// requeues parked jobs later anyway.
func (s *Service) release(ctx context.Context, id string) {
	ids, err := s.subscriptionIDs(ctx, id)
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "release jobs of reactivated client", "client_id", id, "error", err)
		return
	}
	total := 0
	for _, sid := range ids {
		n, err := s.cfg.Jobs.ReleaseSubscription(ctx, sid)
		if err != nil {
			s.cfg.Logger.WarnContext(ctx, "release jobs of reactivated client", "client_id", id, "subscription_id", sid, "error", err)
			continue
		}
		total += n
	}
	s.cfg.Logger.InfoContext(ctx, "client reactivated", "client_id", id, "jobs_released", total)
}

// subscriptionIDs lists the ids of every subscription of a client.
func (s *Service) subscriptionIDs(ctx context.Context, clientID string) ([]string, error) {
	var ids []string
	p := &subscription.ListParams{ClientID: &clientID, Limit: 500}
	for {
		pg, err := s.cfg.Subscriptions.List(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("list subscriptions of client %s: %w", clientID, err)
		}
		for _, sub := range pg.Subscriptions {
			ids = append(ids, sub.ID)
		}
		if pg.NextCursor == "" {
			return ids, nil
		}
		p.Cursor = pg.NextCursor
	}
}

// Delete removes a client: first its subscriptions (their undelivered jobs
// are cancelled), then the client with its tokens. A failure part way
// leaves the client in place, so the DELETE can be repeated.
func (s *Service) Delete(ctx context.Context, id string) error {
	if _, err := s.Get(ctx, id); err != nil {
		return err
	}
	ids, err := s.subscriptionIDs(ctx, id)
	if err != nil {
		return err
	}
	for _, sid := range ids {
		if err := s.cfg.Subscriptions.Delete(ctx, sid); err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("delete subscription %s of client %s: %w", sid, id, err)
		}
	}
	if err := s.cfg.Store.ClientDelete(ctx, id); err != nil {
		return fmt.Errorf("delete client %s: %w", id, err)
	}
	s.cfg.Logger.InfoContext(ctx, "client deleted", "client_id", id, "subscriptions_deleted", len(ids))
	return nil
}

// IssueParams are the fields of a token request.
type IssueParams struct {
	Role string
	// TTLSeconds is nil for TTLDefault.
	TTLSeconds *int64
	Name       string
}

// Issue creates a token for an existing client and returns it with the
// token itself, which is not stored and cannot be shown again.
func (s *Service) Issue(ctx context.Context, clientID string, p IssueParams) (*Token, string, error) {
	if _, err := s.Get(ctx, clientID); err != nil {
		return nil, "", err
	}
	switch p.Role {
	case "admin", "producer", "viewer":
	default:
		return nil, "", reject("/role", "role must be admin, producer or viewer")
	}
	ttl := TTLDefault
	if p.TTLSeconds != nil {
		ttl = time.Duration(*p.TTLSeconds) * time.Second
		if *p.TTLSeconds < int64(TTLShortest/time.Second) || *p.TTLSeconds > int64(TTLLongest/time.Second) {
			return nil, "", reject("/ttlSeconds", "ttlSeconds must be between %d and %d",
				int64(TTLShortest/time.Second), int64(TTLLongest/time.Second))
		}
	}
	if utf8.RuneCountInString(p.Name) > NameMaxLength {
		return nil, "", reject("/name", "name is longer than %d characters", NameMaxLength)
	}
	raw := make([]byte, tokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return nil, "", fmt.Errorf("generate token: %w", err)
	}
	secret := TokenPrefix + base64.RawURLEncoding.EncodeToString(raw)
	now := s.now()
	t := &Token{
		ID: s.cfg.NewIDFunc(), ClientID: clientID, Name: p.Name, Role: p.Role,
		Hash: HashToken(secret), ExpiresAt: now.Add(ttl), CreatedAt: now,
	}
	if err := s.cfg.Store.TokenInsert(ctx, t); err != nil {
		return nil, "", fmt.Errorf("insert token of client %s: %w", clientID, err)
	}
	s.cfg.Logger.InfoContext(ctx, "token issued", "client_id", clientID, "token_id", t.ID, "role", t.Role, "expires_at", t.ExpiresAt)
	return t, secret, nil
}

// Tokens lists a client's tokens (without the tokens themselves).
func (s *Service) Tokens(ctx context.Context, clientID string) ([]*Token, error) {
	if _, err := s.Get(ctx, clientID); err != nil {
		return nil, err
	}
	ts, err := s.cfg.Store.TokenList(ctx, clientID)
	if err != nil {
		return nil, fmt.Errorf("list tokens of client %s: %w", clientID, err)
	}
	return ts, nil
}

// Revoke deletes a token. Every instance reads tokens from the store on
// each request, so it stops working everywhere at once.
func (s *Service) Revoke(ctx context.Context, clientID, tokenID string) error {
	if err := s.cfg.Store.TokenDelete(ctx, clientID, tokenID); err != nil {
		return fmt.Errorf("revoke token %s of client %s: %w", tokenID, clientID, err)
	}
	s.cfg.Logger.InfoContext(ctx, "token revoked", "client_id", clientID, "token_id", tokenID)
	return nil
}

// Authenticate returns the token a presented secret is, with its client.
// An unknown, revoked or expired token, or one whose client no longer
// exists, is an *Unauthorized.
func (s *Service) Authenticate(ctx context.Context, secret string) (*Token, *Client, error) {
	t, err := s.cfg.Store.TokenGetByHash(ctx, HashToken(secret))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, &Unauthorized{Detail: "unknown or revoked token"}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("look up token: %w", err)
	}
	if !s.cfg.NowFunc().Before(t.ExpiresAt) {
		return nil, nil, &Unauthorized{Detail: "the token expired at " + t.ExpiresAt.UTC().Format(time.RFC3339)}
	}
	c, err := s.ClientOf(ctx, t.ClientID)
	if err != nil {
		return nil, nil, err
	}
	return t, c, nil
}

// ClientOf returns the client a scoped key or token names; a client that
// does not exist is an *Unauthorized (API.md §11).
func (s *Service) ClientOf(ctx context.Context, id string) (*Client, error) {
	c, err := s.cfg.Store.ClientGetByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, &Unauthorized{Detail: fmt.Sprintf("the client %q of this key does not exist", id)}
	}
	if err != nil {
		return nil, fmt.Errorf("get client %s: %w", id, err)
	}
	return c, nil
}

// CheckEventClient checks the client an event names (API.md §11): it must
// exist (else a 422 at pointer) and be ACTIVE (else a 422 at pointer). It
// returns nil for "".
func (s *Service) CheckEventClient(ctx context.Context, id, pointer string) error {
	if id == "" {
		return nil
	}
	if !ValidID(id) {
		return reject(pointer, "clientid %q is not a valid client id", id)
	}
	c, err := s.cfg.Store.ClientGetByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return reject(pointer, "no client has the id %q", id)
	}
	if err != nil {
		return fmt.Errorf("get client %s: %w", id, err)
	}
	if c.Status == StatusSuspended {
		return reject(pointer, "the client %q is suspended", id)
	}
	return nil
}

// CheckSubscriptionClient checks a subscription's clientId at creation: it
// must name an existing client (else 422 at /clientId).
func (s *Service) CheckSubscriptionClient(ctx context.Context, id string) error {
	_, err := s.cfg.Store.ClientGetByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return reject("/clientId", "no client has the id %q", id)
	}
	if err != nil {
		return fmt.Errorf("get client %s: %w", id, err)
	}
	return nil
}

// HashToken is the stored form of a token: hex SHA-256. Tokens carry 256
// bits of entropy, so a fast hash is enough (nothing to brute-force).
func HashToken(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}
