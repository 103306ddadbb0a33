package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/dispatch"
)

type poolInput struct {
	Code          *string  `json:"code"`
	Name          *string  `json:"name"`
	RatePerSecond *float64 `json:"ratePerSecond"`
	Burst         *int     `json:"burst"`
	Concurrency   *int     `json:"concurrency"`
}

// poolBurstDefault is the burst of a rate-limited pool that names none.
const poolBurstDefault = 10

// poolConcurrencyDefault is the concurrency of a pool that names none.
const poolConcurrencyDefault = 16

// poolConcurrencyMax bounds one pool's concurrency.
const poolConcurrencyMax = 10000

func validatePool(p *dispatch.Pool) []FieldError {
	var errs []FieldError
	if p.Code == "" || len(p.Code) > 128 || strings.ContainsAny(p.Code, " /\t\n") {
		errs = append(errs, FieldError{Pointer: "/code", Message: "is required: up to 128 characters, no spaces or slashes"})
	}
	if p.RatePerSecond != nil && *p.RatePerSecond <= 0 {
		errs = append(errs, FieldError{Pointer: "/ratePerSecond", Message: "must be positive, or null for no limit"})
	}
	if p.Burst < 1 {
		errs = append(errs, FieldError{Pointer: "/burst", Message: "must be at least 1"})
	}
	if p.Concurrency < 1 || p.Concurrency > poolConcurrencyMax {
		errs = append(errs, FieldError{Pointer: "/concurrency", Message: fmt.Sprintf("must be between 1 and %d", poolConcurrencyMax)})
	}
	return errs
}

func (in *poolInput) apply(p *dispatch.Pool, rateGiven bool) {
	if in.Code != nil {
		p.Code = *in.Code
	}
	if in.Name != nil {
		p.Name = *in.Name
	}
	if rateGiven {
		p.RatePerSecond = in.RatePerSecond
	}
	if in.Burst != nil {
		p.Burst = *in.Burst
	}
	if in.Concurrency != nil {
		p.Concurrency = *in.Concurrency
	}
}

func (s *Server) createPool(c *gin.Context) error {
	var in poolInput
	var raw map[string]any
	if err := decodeJSON(c.Request, &raw, adminBodyLimit); err != nil {
		return err
	}
	if err := reDecode(raw, &in); err != nil {
		return err
	}
	now := s.now()
	p := &dispatch.Pool{ID: s.cfg.IDs.New(), Burst: poolBurstDefault, Concurrency: poolConcurrencyDefault, CreatedAt: now, UpdatedAt: now}
	_, rateGiven := raw["ratePerSecond"]
	in.apply(p, rateGiven)
	if p.Name == "" {
		p.Name = p.Code
	}
	if errs := validatePool(p); len(errs) > 0 {
		return unprocessable("the dispatch pool is invalid", errs...)
	}
	if err := s.cfg.Store.PoolInsert(c.Request.Context(), p); err != nil {
		if isConflict(err) {
			return conflict(fmt.Sprintf("a dispatch pool with code %q exists", p.Code))
		}
		return err
	}
	c.Header("Location", "/api/dispatch-pools/"+p.ID)
	c.JSON(http.StatusCreated, p)
	return nil
}

func (s *Server) listPools(c *gin.Context) error {
	limit, cursor, err := listParams(c)
	if err != nil {
		return err
	}
	pools, err := s.cfg.Store.PoolList(c.Request.Context())
	if err != nil {
		return err
	}
	// Pools are few: the store returns them all and the page is cut here,
	// newest (largest ULID) first.
	items, next := pageDesc(pools, func(p *dispatch.Pool) string { return p.ID }, limit, cursor)
	writePage(c, items, next)
	return nil
}

func (s *Server) getPool(c *gin.Context) error {
	p, err := s.cfg.Store.PoolGetByID(c.Request.Context(), c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "dispatch pool")
	}
	c.JSON(http.StatusOK, p)
	return nil
}

func (s *Server) patchPool(c *gin.Context) error {
	p, err := s.cfg.Store.PoolGetByID(c.Request.Context(), c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "dispatch pool")
	}
	var raw map[string]any
	if err := decodeJSON(c.Request, &raw, adminBodyLimit); err != nil {
		return err
	}
	var in poolInput
	if err := reDecode(raw, &in); err != nil {
		return err
	}
	if p.Code == dispatch.DefaultPoolCode && in.Code != nil && *in.Code != p.Code {
		return conflict("the default pool's code cannot change")
	}
	_, rateGiven := raw["ratePerSecond"]
	in.apply(p, rateGiven)
	p.UpdatedAt = s.now()
	if errs := validatePool(p); len(errs) > 0 {
		return unprocessable("the dispatch pool is invalid", errs...)
	}
	if err := s.cfg.Store.PoolUpdate(c.Request.Context(), p); err != nil {
		if isConflict(err) {
			return conflict(fmt.Sprintf("a dispatch pool with code %q exists", p.Code))
		}
		return s.notFoundOr(err, "dispatch pool")
	}
	if s.cfg.PoolChangedFunc != nil {
		s.cfg.PoolChangedFunc(p.ID)
	}
	c.JSON(http.StatusOK, p)
	return nil
}

func (s *Server) deletePool(c *gin.Context) error {
	p, err := s.cfg.Store.PoolGetByID(c.Request.Context(), c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "dispatch pool")
	}
	if p.Code == dispatch.DefaultPoolCode {
		return conflict("the default pool cannot be deleted")
	}
	ix, err := s.cfg.Subscriptions.Index(c.Request.Context())
	if err != nil {
		return err
	}
	for _, sub := range ix.Subscriptions() {
		if sub.DispatchPoolID != nil && *sub.DispatchPoolID == p.ID {
			return conflict(fmt.Sprintf("the pool is used by subscription %q", sub.Code))
		}
	}
	if err := s.cfg.Store.PoolDelete(c.Request.Context(), p.ID); err != nil {
		return s.notFoundOr(err, "dispatch pool")
	}
	if s.cfg.PoolChangedFunc != nil {
		s.cfg.PoolChangedFunc(p.ID)
	}
	c.Status(http.StatusNoContent)
	return nil
}
