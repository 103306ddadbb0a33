package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/subscription/replay"
)

// errNoReplays answers the replay routes of a server built without a
// replay service (a 500).
var errNoReplays = errors.New("the replay service is not configured")

// startReplay serves POST /api/subscriptions/{id}/replay (API.md §13).
func (s *Server) startReplay(c *gin.Context) error {
	if s.cfg.Replays == nil {
		return errNoReplays
	}
	var in struct {
		Since      string   `json:"since"`
		Until      string   `json:"until"`
		EventTypes []string `json:"eventTypes"`
		Redeliver  bool     `json:"redeliver"`
	}
	if err := decodeJSON(c.Request, &in, adminBodyLimit); err != nil {
		return err
	}
	p := &replay.StartParams{EventTypes: in.EventTypes, Redeliver: in.Redeliver}
	var errs []FieldError
	for _, f := range []struct {
		ptr, v string
		dst    *time.Time
	}{{"/since", in.Since, &p.Since}, {"/until", in.Until, &p.Until}} {
		if f.v == "" {
			continue
		}
		t, err := parseTime(f.v)
		if err != nil {
			errs = append(errs, FieldError{Pointer: f.ptr, Message: "must be an RFC 3339 timestamp"})
			continue
		}
		*f.dst = t
	}
	if len(errs) > 0 {
		return unprocessable("invalid timestamp", errs...)
	}
	r, err := s.cfg.Replays.Start(c.Request.Context(), c.Param("id"), p)
	if limit, ok := errors.AsType[*replay.LimitError](err); ok {
		// 409: a replay of this subscription runs; 429: the client's bound.
		return newProblem(limit.Status, limit.Detail)
	}
	if err != nil {
		return s.notFoundOr(err, "subscription")
	}
	c.Header("Location", "/api/replays/"+r.ID)
	c.JSON(http.StatusAccepted, r)
	return nil
}

// getReplay serves GET /api/replays/{id}.
func (s *Server) getReplay(c *gin.Context) error {
	if s.cfg.Replays == nil {
		return errNoReplays
	}
	r, err := s.cfg.Replays.Get(c.Request.Context(), c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "replay")
	}
	c.JSON(http.StatusOK, r)
	return nil
}

// listReplays serves GET /api/subscriptions/{id}/replays, newest first.
func (s *Server) listReplays(c *gin.Context) error {
	if s.cfg.Replays == nil {
		return errNoReplays
	}
	limit, cursor, err := listParams(c)
	if err != nil {
		return err
	}
	if _, err := s.subscriptions.Get(c.Request.Context(), c.Param("id")); err != nil {
		return s.notFoundOr(err, "subscription")
	}
	pg, err := s.cfg.Replays.List(c.Request.Context(), &replay.ListParams{
		SubscriptionID: c.Param("id"), Limit: limit, Cursor: cursor,
	})
	if err != nil {
		return err
	}
	writePage(c, pg.Replays, pg.NextCursor)
	return nil
}
