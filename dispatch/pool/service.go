// Package pool holds dispatch pools (API.md §4): the pool's definition and
// its store port, and the service that manages them — it fills in the
// defaults of a new pool, validates every write, keeps the default pool's
// code and existence, and refuses to delete a pool a subscription uses. The
// router runs each pool at delivery time (router/pool.go: its concurrency
// slots and rate limiter).
package pool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hooklane/hooklane/store"
)

// BurstDefault is the burst of a rate-limited pool that names none.
const BurstDefault = 10

// ConcurrencyDefault is the concurrency of a pool that names none.
const ConcurrencyDefault = 16

// ConcurrencyMax bounds one pool's concurrency.
const ConcurrencyMax = 10000

// codeMaxLen bounds a pool's code.
const codeMaxLen = 128

// Input is a pool as a client writes it: nil fields are left as they are
// (a patch) or take their default (a create). RateGiven says whether
// ratePerSecond was in the request at all, since null is a value there (no
// limit).
type Input struct {
	Code          *string
	Name          *string
	RatePerSecond *float64
	RateGiven     bool
	Burst         *int
	Concurrency   *int
}

func (in *Input) apply(p *Pool) {
	if in.Code != nil {
		p.Code = *in.Code
	}
	if in.Name != nil {
		p.Name = *in.Name
	}
	if in.RateGiven {
		p.RatePerSecond = in.RatePerSecond
	}
	if in.Burst != nil {
		p.Burst = *in.Burst
	}
	if in.Concurrency != nil {
		p.Concurrency = *in.Concurrency
	}
}

// FieldError locates one problem of a pool in the request body.
type FieldError struct {
	// Pointer is the RFC 6901 pointer of the field.
	Pointer string
	// Message says what is wrong with it.
	Message string
}

// Rejection is a pool the Service refuses as written (the API answers
// 422).
type Rejection struct { //nolint:errname // read as pools.Rejection, answered as 422; the name says what it is
	Detail string
	Errors []FieldError
}

func (e *Rejection) Error() string {
	if len(e.Errors) == 0 {
		return e.Detail
	}
	return e.Detail + ": " + e.Errors[0].Pointer + " " + e.Errors[0].Message
}

// Conflict is a write the stored pools or subscriptions refuse (the API
// answers 409). It wraps store.ErrConflict.
type Conflict struct { //nolint:errname // read as pools.Conflict, answered as 409; the name says what it is
	Detail string
}

func (e *Conflict) Error() string { return e.Detail }

// Unwrap returns store.ErrConflict.
func (e *Conflict) Unwrap() error { return store.ErrConflict }

// UsersFunc returns the code of a subscription that runs in the pool, or
// "" when none does.
type UsersFunc func(ctx context.Context, poolID string) (string, error)

// Config wires a Service.
type Config struct {
	// Store holds the pools.
	Store Store
	// UsedByFunc finds a subscription using a pool before it is deleted.
	UsedByFunc UsersFunc
	// NewIDFunc makes the id of a new pool.
	NewIDFunc func() string
	// OnChangeFunc, when set, is called with the id of a pool that changed
	// or was deleted (the router's limiters follow).
	OnChangeFunc func(id string)
	// NowFunc is the clock. Default time.Now.
	NowFunc func() time.Time
}

// Service creates, changes and deletes dispatch pools.
type Service struct {
	cfg Config
}

// NewService returns a Service.
func NewService(cfg Config) *Service {
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	return &Service{cfg: cfg}
}

func (s *Service) now() time.Time { return s.cfg.NowFunc().UTC().Truncate(time.Millisecond) }

// Validate returns the problems of p, none when it is valid.
func Validate(p *Pool) []FieldError {
	var errs []FieldError
	if p.Code == "" || len(p.Code) > codeMaxLen || strings.ContainsAny(p.Code, " /\t\n") {
		errs = append(errs, FieldError{Pointer: "/code", Message: fmt.Sprintf("is required: up to %d characters, no spaces or slashes", codeMaxLen)})
	}
	if p.RatePerSecond != nil && *p.RatePerSecond <= 0 {
		errs = append(errs, FieldError{Pointer: "/ratePerSecond", Message: "must be positive, or null for no limit"})
	}
	if p.Burst < 1 {
		errs = append(errs, FieldError{Pointer: "/burst", Message: "must be at least 1"})
	}
	if p.Concurrency < 1 || p.Concurrency > ConcurrencyMax {
		errs = append(errs, FieldError{Pointer: "/concurrency", Message: fmt.Sprintf("must be between 1 and %d", ConcurrencyMax)})
	}
	return errs
}

// Create stores a new pool from in, with the defaults for what it leaves
// out (its name is its code when not given).
func (s *Service) Create(ctx context.Context, in *Input) (*Pool, error) {
	now := s.now()
	p := &Pool{ID: s.cfg.NewIDFunc(), Burst: BurstDefault, Concurrency: ConcurrencyDefault, CreatedAt: now, UpdatedAt: now}
	in.apply(p)
	if p.Name == "" {
		p.Name = p.Code
	}
	if errs := Validate(p); len(errs) > 0 {
		return nil, &Rejection{Detail: "the dispatch pool is invalid", Errors: errs}
	}
	if err := s.cfg.Store.PoolInsert(ctx, p); err != nil {
		return nil, s.writeError(p, err)
	}
	return p, nil
}

// Get returns one pool; store.ErrNotFound when there is none.
func (s *Service) Get(ctx context.Context, id string) (*Pool, error) {
	p, err := s.cfg.Store.PoolGetByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("get pool %s: %w", id, err)
	}
	return p, nil
}

// List returns every pool.
func (s *Service) List(ctx context.Context) ([]*Pool, error) {
	ps, err := s.cfg.Store.PoolList(ctx)
	if err != nil {
		return nil, fmt.Errorf("list pools: %w", err)
	}
	return ps, nil
}

// Patch changes the fields in gives of pool id. The default pool keeps its
// code.
func (s *Service) Patch(ctx context.Context, id string, in *Input) (*Pool, error) {
	p, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if p.Code == DefaultPoolCode && in.Code != nil && *in.Code != p.Code {
		return nil, &Conflict{Detail: "the default pool's code cannot change"}
	}
	in.apply(p)
	p.UpdatedAt = s.now()
	if errs := Validate(p); len(errs) > 0 {
		return nil, &Rejection{Detail: "the dispatch pool is invalid", Errors: errs}
	}
	if err := s.cfg.Store.PoolUpdate(ctx, p); err != nil {
		return nil, s.writeError(p, err)
	}
	s.changed(p.ID)
	return p, nil
}

// Delete removes pool id. The default pool and a pool a subscription uses
// cannot be deleted.
func (s *Service) Delete(ctx context.Context, id string) error {
	p, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	if p.Code == DefaultPoolCode {
		return &Conflict{Detail: "the default pool cannot be deleted"}
	}
	if s.cfg.UsedByFunc != nil {
		code, err := s.cfg.UsedByFunc(ctx, p.ID)
		if err != nil {
			return fmt.Errorf("find the users of pool %s: %w", p.ID, err)
		}
		if code != "" {
			return &Conflict{Detail: fmt.Sprintf("the pool is used by subscription %q", code)}
		}
	}
	if err := s.cfg.Store.PoolDelete(ctx, p.ID); err != nil {
		return fmt.Errorf("delete pool %s: %w", p.ID, err)
	}
	s.changed(p.ID)
	return nil
}

func (s *Service) changed(id string) {
	if s.cfg.OnChangeFunc != nil {
		s.cfg.OnChangeFunc(id)
	}
}

// writeError turns a refused write of p into a Conflict when its code is
// taken.
func (s *Service) writeError(p *Pool, err error) error {
	if errors.Is(err, store.ErrConflict) {
		return &Conflict{Detail: fmt.Sprintf("a dispatch pool with code %q exists", p.Code)}
	}
	return fmt.Errorf("write pool %s: %w", p.ID, err)
}
