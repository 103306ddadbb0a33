package api

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/ingest/task"
	"github.com/hooklane/hooklane/store"
)

func (s *Server) getJob(c *gin.Context) error {
	j, err := s.cfg.Store.JobGetByID(c.Request.Context(), c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "dispatch job")
	}
	return s.writeWithHistory(c, j.ID, jobForCaller(c, j)) // ?include=history: api/stream.go
}

func (s *Server) listJobs(c *gin.Context) error {
	limit, cursor, err := listParams(c)
	if err != nil {
		return err
	}
	p, err := jobFilter(c)
	if err != nil {
		return err
	}
	p.Limit, p.Cursor = limit, cursor
	if v := c.Query("clientId"); v != "" {
		// API.md §11: a client's jobs are the jobs of its subscriptions.
		if p.SubscriptionIDs, err = s.owners.SubscriptionIDs(c.Request.Context(), v); err != nil {
			return err
		}
	}
	pg, err := s.cfg.Store.JobList(c.Request.Context(), p)
	if err != nil {
		return err
	}
	writePage(c, jobsForCaller(c, pg.Jobs), pg.NextCursor)
	return nil
}

func jobFilter(c *gin.Context) (*dispatch.JobListParams, error) {
	since, err := timeParam(c, "since")
	if err != nil {
		return nil, err
	}
	until, err := timeParam(c, "until")
	if err != nil {
		return nil, err
	}
	status := dispatch.Status(c.Query("status"))
	if status != "" && !status.Valid() {
		return nil, unprocessable("status must be one of PENDING, QUEUED, IN_PROGRESS, COMPLETED, ERROR, CANCELLED")
	}
	return &dispatch.JobListParams{
		Status: status, Subscription: c.Query("subscription"), EventID: c.Query("eventId"),
		EventType: c.Query("eventType"), MessageGroup: c.Query("messageGroup"), Since: since, Until: until,
	}, nil
}

// jobError maps the lifecycle's refusal of an operator's move.
func (s *Server) jobError(err error) error {
	if na, ok := errors.AsType[*dispatch.NotAllowedError](err); ok {
		return conflict(na.Error())
	}
	if isConflict(err) {
		return conflict("the job changed concurrently; retry")
	}
	return s.notFoundOr(err, "dispatch job")
}

func (s *Server) retryJob(c *gin.Context) error {
	j, err := s.cfg.Jobs.Retry(c.Request.Context(), c.Param("id"))
	if err != nil {
		return s.jobError(err)
	}
	c.JSON(http.StatusOK, jobForCaller(c, j))
	return nil
}

func (s *Server) cancelJob(c *gin.Context) error {
	j, err := s.cfg.Jobs.Cancel(c.Request.Context(), c.Param("id"), "cancelled by an operator")
	if err != nil {
		return s.jobError(err)
	}
	c.JSON(http.StatusOK, jobForCaller(c, j))
	return nil
}

func (s *Server) bulkRetry(c *gin.Context) error {
	var in struct {
		Status       dispatch.Status `json:"status"`
		Subscription string          `json:"subscription"`
		EventType    string          `json:"eventType"`
		Since        string          `json:"since"`
		Until        string          `json:"until"`
	}
	if err := decodeJSON(c.Request, &in, adminBodyLimit); err != nil {
		return err
	}
	in.Status = cmp.Or(in.Status, dispatch.StatusError)
	if in.Status != dispatch.StatusError && in.Status != dispatch.StatusCancelled {
		return unprocessable("status must be ERROR or CANCELLED", FieldError{Pointer: "/status", Message: "must be ERROR or CANCELLED"})
	}
	p := &dispatch.JobListParams{Status: in.Status, Subscription: in.Subscription, EventType: in.EventType}
	for ptr, v := range map[string]string{"/since": in.Since, "/until": in.Until} {
		if v == "" {
			continue
		}
		t, err := parseTime(v)
		if err != nil {
			return unprocessable("invalid timestamp", FieldError{Pointer: ptr, Message: "must be an RFC 3339 timestamp"})
		}
		if ptr == "/since" {
			p.Since = t
		} else {
			p.Until = t
		}
	}
	count, err := s.cfg.Jobs.RetryMany(c.Request.Context(), p)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"count": count})
	return nil
}

// taskInput is the body of POST /api/dispatch-jobs.
type taskInput struct {
	Code           string            `json:"code"`
	TargetURL      string            `json:"targetUrl"`
	Payload        json.RawMessage   `json:"payload"`
	Subject        string            `json:"subject"`
	MessageGroup   string            `json:"messageGroup"`
	Mode           dispatch.Mode     `json:"mode"`
	DispatchPoolID string            `json:"dispatchPoolId"`
	Headers        map[string]string `json:"headers"`
	TimeoutSeconds *int              `json:"timeoutSeconds"`
	MaxAgeSeconds  *int              `json:"maxAgeSeconds"`
	Retry          *dispatch.Retry   `json:"retry"`
	Secret         *string           `json:"secret"`
	Auth           *endpoint.Auth    `json:"auth"`
	TLS            *endpoint.TLS     `json:"tls"`
}

func (s *Server) createTaskJob(c *gin.Context) error {
	var in taskInput
	if err := decodeJSON(c.Request, &in, adminBodyLimit); err != nil {
		return err
	}
	j, secret, err := s.tasks.Create(c.Request.Context(), &task.Input{
		Code: in.Code, TargetURL: in.TargetURL, Payload: in.Payload, Subject: in.Subject,
		MessageGroup: in.MessageGroup, Mode: in.Mode, DispatchPoolID: in.DispatchPoolID, Headers: in.Headers,
		TimeoutSeconds: in.TimeoutSeconds, MaxAgeSeconds: in.MaxAgeSeconds, Retry: in.Retry,
		Secret: in.Secret, Auth: in.Auth, TLS: in.TLS,
	})
	if err != nil {
		if errors.Is(err, store.ErrUnavailable) {
			return newProblem(http.StatusServiceUnavailable, "the job could not be stored; retry later")
		}
		return err
	}
	c.Header("Location", "/api/dispatch-jobs/"+j.ID)
	if secret == "" {
		c.JSON(http.StatusCreated, jobForCaller(c, j))
		return nil
	}
	b, err := json.Marshal(jobForCaller(c, j))
	if err != nil {
		return fmt.Errorf("encode job: %w", err)
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	m["secret"], _ = json.Marshal(secret) //nolint:errchkjson // a string always encodes
	c.JSON(http.StatusCreated, m)
	return nil
}
