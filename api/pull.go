package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/router/pull"
)

func parseClaimParams(c *gin.Context) (*pull.ClaimParams, error) {
	p := &pull.ClaimParams{Worker: strings.TrimSpace(c.Query("worker_id")), Max: 1}
	if prob := checkWorkerID(p.Worker, "worker_id"); prob != nil {
		return nil, prob
	}
	if v := c.Query("max"); v != "" {
		n, ok := parseCount(v, pull.MaxClaim)
		switch {
		case !ok:
			return nil, badRequest("max must be a positive integer")
		case n < 1:
			// A well-formed number out of range (API.md conventions: 422).
			return nil, unprocessable("max must be a positive integer")
		}
		p.Max = n
	}
	if v := c.Query("wait"); v != "" {
		d, err := parseWait(v)
		if err != nil {
			return nil, err
		}
		p.Wait = min(d, pull.MaxWait)
	}
	for t := range strings.SplitSeq(c.Query("tags"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			p.Tags = append(p.Tags, t)
		}
	}
	return p, nil
}

// parseWait reads a Go duration ("20s") or a number of seconds ("20").
func parseWait(v string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(f) {
		if f < 0 {
			return 0, unprocessable("wait must not be negative")
		}
		return time.Duration(min(f, pull.MaxWait.Seconds()) * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return 0, badRequest("wait must be a duration such as 20s, or a number of seconds")
	case d < 0:
		return 0, unprocessable("wait must not be negative")
	}
	return d, nil
}

// claimJobs is GET /api/subscriptions/{id}/jobs/next.
func (s *Server) claimJobs(c *gin.Context) error {
	p, err := parseClaimParams(c)
	if err != nil {
		return err
	}
	items, err := s.cfg.Pull.Claim(c.Request.Context(), c.Param("id"), *p)
	switch {
	case errors.Is(err, pull.ErrNotPull):
		return badRequest(err.Error())
	case err != nil:
		return s.notFoundOr(err, "subscription")
	case len(items) == 0:
		c.Status(http.StatusNoContent)
		return nil
	}
	out := make([]json.RawMessage, 0, len(items))
	for _, it := range items {
		b, err := json.Marshal(jobForCaller(c, it.Job))
		if err != nil {
			return fmt.Errorf("encode job: %w", err)
		}
		if it.Event != nil {
			ev, err := json.Marshal(it.Event)
			if err != nil {
				return fmt.Errorf("encode event: %w", err)
			}
			b = append(append(append(b[:len(b)-1], `,"event":`...), ev...), '}')
		}
		out = append(out, b)
	}
	c.JSON(http.StatusOK, gin.H{"items": out})
	return nil
}

// reportInput is the body of /complete, /fail and /heartbeat.
type reportInput struct {
	WorkerID        string `json:"workerId"`
	ExecutionTimeMs int64  `json:"executionTimeMs"`
	StatusCode      int    `json:"statusCode"`
	ErrorMessage    string `json:"errorMessage"`
}

func readReport(c *gin.Context) (pull.Report, error) {
	var in reportInput
	if err := decodeJSON(c.Request, &in, adminBodyLimit); err != nil {
		return pull.Report{}, err
	}
	if err := checkReport(&in); err != nil {
		return pull.Report{}, err
	}
	return pull.Report(in), nil
}

// reportError maps the lifecycle's refusal of a worker's report.
func (s *Server) reportError(err error) error {
	switch {
	case errors.Is(err, dispatch.ErrNotHolder):
		return conflict("the job is held by another worker")
	case errors.Is(err, dispatch.ErrInvalidTransition):
		return conflict(err.Error())
	}
	return s.notFoundOr(err, "dispatch job")
}

// completeJob is POST /api/dispatch-jobs/{id}/complete.
func (s *Server) completeJob(c *gin.Context) error {
	in, err := readReport(c)
	if err != nil {
		return err
	}
	j, err := s.cfg.Pull.Complete(c.Request.Context(), c.Param("id"), in)
	if err != nil {
		return s.reportError(err)
	}
	c.JSON(http.StatusOK, jobForCaller(c, j))
	return nil
}

// failJob is POST /api/dispatch-jobs/{id}/fail: the retry policy of push
// delivery applies — a retry after the backoff while attempts and max age
// allow, else ERROR.
func (s *Server) failJob(c *gin.Context) error {
	in, err := readReport(c)
	if err != nil {
		return err
	}
	j, err := s.cfg.Pull.Fail(c.Request.Context(), c.Param("id"), in)
	if err != nil {
		return s.reportError(err)
	}
	out := gin.H{"retryScheduled": j.Status != dispatch.StatusError, "job": jobForCaller(c, j)}
	if j.NextAttemptAt != nil {
		out["nextAttemptAt"] = formatTime(*j.NextAttemptAt)
	}
	c.JSON(http.StatusOK, out)
	return nil
}

// heartbeatJob is POST /api/dispatch-jobs/{id}/heartbeat.
func (s *Server) heartbeatJob(c *gin.Context) error {
	var in reportInput
	if err := decodeJSON(c.Request, &in, adminBodyLimit); err != nil {
		return err
	}
	if p := checkWorkerID(in.WorkerID, "workerId"); p != nil {
		return p
	}
	until, err := s.cfg.Pull.Heartbeat(c.Request.Context(), c.Param("id"), in.WorkerID)
	if err != nil {
		if errors.Is(err, dispatch.ErrNotHolder) {
			return conflict("the job is not held by this worker")
		}
		return s.notFoundOr(err, "dispatch job")
	}
	c.JSON(http.StatusOK, gin.H{"leaseExpiresAt": formatTime(until)})
	return nil
}
