package api

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
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
	pg, err := s.cfg.Store.JobList(c.Request.Context(), p)
	if err != nil {
		return err //nolint:wrapcheck // mapped by h
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

// moveJob moves a job to `to` with one status event, re-reading it when a
// concurrent writer got there first. It returns a *dispatch.TransitionError
// (409) when the job's status does not allow the move.
func (s *Server) moveJob(c *gin.Context, j *dispatch.Job, to dispatch.Status, typ, reason string) (*dispatch.Job, error) {
	for range 5 {
		now := s.now()
		if err := j.Transition(to, now); err != nil {
			return nil, err //nolint:wrapcheck // typed, mapped by h
		}
		var events []stream.Event
		if to == dispatch.StatusPending {
			// An operator retry: the job gets maxAttempts more attempts, is
			// due at once, and its max-age window restarts now (the RETRIED
			// entry, see dispatch.Job.AgeStart).
			j.MaxAttempts = j.AttemptCount + j.Retry.WithDefaults().MaxAttempts
			j.NextAttemptAt = &now
			j.Attempts = append(j.Attempts, dispatch.Attempt{
				Attempt: j.AttemptCount, Action: dispatch.ActionRetried, StartedAt: now, Worker: "operator",
			})
		} else {
			ev := j.StatusEvent(s.cfg.IDs.New(), typ, now)
			ev.Data.Error = reason
			events = append(events, ev)
		}
		err := s.cfg.Store.JobUpdate(c.Request.Context(), &dispatch.JobUpdateParams{Job: j, Events: events})
		if err == nil {
			return j, nil
		}
		if !isConflict(err) {
			return nil, err //nolint:wrapcheck // mapped by h
		}
		if j, err = s.cfg.Store.JobGetByID(c.Request.Context(), j.ID); err != nil {
			return nil, s.notFoundOr(err, "dispatch job")
		}
	}
	return nil, conflict("the job changed concurrently; retry")
}

// queueNow moves a PENDING job to QUEUED and sends it (pull jobs just wait
// QUEUED for a worker). A failure leaves it PENDING and due, for the
// pending poller.
func (s *Server) queueNow(c *gin.Context, j *dispatch.Job) *dispatch.Job {
	now := s.now()
	if err := j.Transition(dispatch.StatusQueued, now); err != nil {
		return j
	}
	ev := j.StatusEvent(s.cfg.IDs.New(), stream.TypeDispatchQueued, now)
	if err := s.cfg.Store.JobUpdate(c.Request.Context(), &dispatch.JobUpdateParams{Job: j, Events: []stream.Event{ev}}); err != nil {
		fresh, gerr := s.cfg.Store.JobGetByID(c.Request.Context(), j.ID)
		if gerr != nil {
			return j
		}
		return fresh
	}
	if j.Delivery != dispatch.DeliveryPull {
		_, _ = s.cfg.Enqueuer.Enqueue(c.Request.Context(), []*dispatch.Job{j})
	}
	return j
}

func (s *Server) retryJob(c *gin.Context) error {
	j, err := s.cfg.Store.JobGetByID(c.Request.Context(), c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "dispatch job")
	}
	if j.Status != dispatch.StatusError && j.Status != dispatch.StatusCancelled {
		return conflict(fmt.Sprintf("only an ERROR or CANCELLED job can be retried; this one is %s", j.Status))
	}
	j, err = s.moveJob(c, j, dispatch.StatusPending, "", "")
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, jobForCaller(c, s.queueNow(c, j)))
	return nil
}

func (s *Server) cancelJob(c *gin.Context) error {
	j, err := s.cfg.Store.JobGetByID(c.Request.Context(), c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "dispatch job")
	}
	if j.Status == dispatch.StatusCompleted || j.Status == dispatch.StatusCancelled {
		return conflict(fmt.Sprintf("a %s job cannot be cancelled", j.Status))
	}
	j, err = s.moveJob(c, j, dispatch.StatusCancelled, stream.TypeDispatchCancelled, "cancelled by an operator")
	if err != nil {
		return err
	}
	s.releaseGroup(c, j)
	c.JSON(http.StatusOK, jobForCaller(c, j))
	return nil
}

// releaser shares the router's release logic: held jobs go back into the
// line at once instead of waiting for the safety poll.
func (s *Server) releaser() *dispatch.Releaser {
	return &dispatch.Releaser{Store: s.cfg.Store, Enqueuer: s.cfg.Enqueuer, NewID: s.cfg.IDs.New, NowFunc: s.now}
}

// releaseGroup lets the next job of a BLOCK_ON_ERROR group go after j, which
// held it, was cancelled. A failure is logged: the safety poll releases the
// job later.
func (s *Server) releaseGroup(c *gin.Context, j *dispatch.Job) {
	if j.Mode != dispatch.ModeBlockOnError || j.MessageGroup == "" {
		return
	}
	if _, err := s.releaser().ReleaseGroup(c.Request.Context(), j.SubscriptionID, j.MessageGroup); err != nil {
		s.cfg.Logger.WarnContext(c.Request.Context(), "release blocked group failed", "job_id", j.ID, "error", err)
	}
}

// releasePaused queues the jobs parked while subscription id was paused; the
// resume handler calls it. A failure is logged: the safety poll releases the
// jobs later.
func (s *Server) releasePaused(c *gin.Context, id string) {
	if _, err := s.releaser().ReleaseSubscription(c.Request.Context(), id); err != nil {
		s.cfg.Logger.WarnContext(c.Request.Context(), "release paused jobs failed", "subscription_id", id, "error", err)
	}
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
	p := &dispatch.JobListParams{Status: in.Status, Subscription: in.Subscription, EventType: in.EventType, Limit: limitMax}
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
	count := 0
	for {
		pg, err := s.cfg.Store.JobList(c.Request.Context(), p)
		if err != nil {
			return err //nolint:wrapcheck // mapped by h
		}
		for _, j := range pg.Jobs {
			moved, err := s.moveJob(c, j, dispatch.StatusPending, "", "")
			if err != nil {
				continue // moved on meanwhile: no longer ours to redrive
			}
			s.queueNow(c, moved)
			count++
		}
		if pg.NextCursor == "" {
			break
		}
		p.Cursor = pg.NextCursor
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
}

func (s *Server) createTaskJob(c *gin.Context) error {
	var in taskInput
	if err := decodeJSON(c.Request, &in, adminBodyLimit); err != nil {
		return err
	}
	// Validate through the subscription rules: a TASK job carries the same
	// delivery settings a subscription does.
	probe := &subscription.Subscription{}
	probe.ApplyDefaults()
	probe.Code = "task"
	probe.EventTypes = []subscription.Binding{{EventTypeCode: "task:job"}}
	probe.Target, probe.Headers = in.TargetURL, in.Headers
	probe.Mode = cmp.Or(in.Mode, dispatch.ModeImmediate)
	if in.TimeoutSeconds != nil {
		probe.TimeoutSeconds = *in.TimeoutSeconds
	}
	if in.MaxAgeSeconds != nil {
		probe.MaxAgeSeconds = *in.MaxAgeSeconds
	}
	if in.Retry != nil {
		probe.Retry = in.Retry.WithDefaults()
	}
	if in.DispatchPoolID != "" {
		probe.DispatchPoolID = &in.DispatchPoolID
	}
	var errs []FieldError
	if strings.TrimSpace(in.Code) == "" {
		errs = append(errs, FieldError{Pointer: "/code", Message: "is required"})
	}
	if len(in.Payload) == 0 {
		errs = append(errs, FieldError{Pointer: "/payload", Message: "is required"})
	}
	if len(errs) > 0 {
		return unprocessable("the job is invalid", errs...)
	}
	if err := s.checkSubscription(c, probe); err != nil {
		if p, ok := err.(*Problem); ok { //nolint:errorlint // our own value, not wrapped
			p.Detail = "the job is invalid"
			for i := range p.Errors {
				p.Errors[i].Pointer = strings.Replace(p.Errors[i].Pointer, "/target", "/targetUrl", 1)
			}
		}
		return err
	}
	secret := router.NewSecret()
	generated := true
	if in.Secret != nil {
		if _, err := router.SecretKey(*in.Secret); err != nil {
			return unprocessable("the secret is invalid", FieldError{Pointer: "/secret", Message: err.Error()})
		}
		secret, generated = *in.Secret, false
	}
	now := s.now()
	j := &dispatch.Job{
		ID: s.cfg.IDs.New(), Kind: dispatch.KindTask, Code: in.Code, Subject: in.Subject,
		TargetURL: in.TargetURL, Mode: probe.Mode, Delivery: dispatch.DeliveryPush, MessageGroup: in.MessageGroup,
		DispatchPoolID: in.DispatchPoolID, Headers: in.Headers, TimeoutSeconds: probe.TimeoutSeconds,
		MaxAgeSeconds: probe.MaxAgeSeconds, Retry: probe.Retry, Payload: in.Payload, Secret: secret,
		Status: dispatch.StatusQueued, MaxAttempts: probe.Retry.MaxAttempts, Attempts: []dispatch.Attempt{},
		CreatedAt: now, UpdatedAt: now, Version: 1,
	}
	events := []stream.Event{
		j.StatusEvent(s.cfg.IDs.New(), stream.TypeDispatchCreated, now),
		j.StatusEvent(s.cfg.IDs.New(), stream.TypeDispatchQueued, now),
	}
	if err := s.cfg.Store.JobInsertMany(c.Request.Context(), &dispatch.JobInsertManyParams{Jobs: []*dispatch.Job{j}, Events: events}); err != nil {
		return newProblem(http.StatusServiceUnavailable, "the job could not be stored; retry later")
	}
	_, _ = s.cfg.Enqueuer.Enqueue(c.Request.Context(), []*dispatch.Job{j})
	c.Header("Location", "/api/dispatch-jobs/"+j.ID)
	if !generated {
		c.JSON(http.StatusCreated, jobForCaller(c, j))
		return nil
	}
	b, err := json.Marshal(jobForCaller(c, j))
	if err != nil {
		return fmt.Errorf("encode job: %w", err)
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	m["secret"], _ = json.Marshal(secret)
	c.JSON(http.StatusCreated, m)
	return nil
}
