package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/dispatch/pool"
)

type poolInput struct {
	Code          *string  `json:"code"`
	Name          *string  `json:"name"`
	RatePerSecond *float64 `json:"ratePerSecond"`
	Burst         *int     `json:"burst"`
	Concurrency   *int     `json:"concurrency"`
}

// decodePool reads a pool from the request body; ratePerSecond's presence
// is kept apart from its value, since null there means "no limit".
func decodePool(c *gin.Context) (*pool.Input, error) {
	var raw map[string]any
	if err := decodeJSON(c.Request, &raw, adminBodyLimit); err != nil {
		return nil, err
	}
	var in poolInput
	if err := reDecode(raw, &in); err != nil {
		return nil, err
	}
	_, rateGiven := raw["ratePerSecond"]
	return &pool.Input{
		Code: in.Code, Name: in.Name, RatePerSecond: in.RatePerSecond, RateGiven: rateGiven,
		Burst: in.Burst, Concurrency: in.Concurrency,
	}, nil
}

func (s *Server) createPool(c *gin.Context) error {
	in, err := decodePool(c)
	if err != nil {
		return err
	}
	p, err := s.pools.Create(c.Request.Context(), in)
	if err != nil {
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
	ps, err := s.pools.List(c.Request.Context())
	if err != nil {
		return err
	}
	// Pools are few: the store returns them all and the page is cut here,
	// newest (largest ULID) first.
	items, next := pageDesc(ps, func(p *pool.Pool) string { return p.ID }, limit, cursor)
	writePage(c, items, next)
	return nil
}

func (s *Server) getPool(c *gin.Context) error {
	p, err := s.pools.Get(c.Request.Context(), c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "dispatch pool")
	}
	c.JSON(http.StatusOK, p)
	return nil
}

func (s *Server) patchPool(c *gin.Context) error {
	// A missing pool is a 404 before the body is read.
	if _, err := s.pools.Get(c.Request.Context(), c.Param("id")); err != nil {
		return s.notFoundOr(err, "dispatch pool")
	}
	in, err := decodePool(c)
	if err != nil {
		return err
	}
	p, err := s.pools.Patch(c.Request.Context(), c.Param("id"), in)
	if err != nil {
		return s.notFoundOr(err, "dispatch pool")
	}
	c.JSON(http.StatusOK, p)
	return nil
}

func (s *Server) deletePool(c *gin.Context) error {
	if err := s.pools.Delete(c.Request.Context(), c.Param("id")); err != nil {
		return s.notFoundOr(err, "dispatch pool")
	}
	c.Status(http.StatusNoContent)
	return nil
}
