package api

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/ingest"
)

// jobRef is a job as an event answer lists it.
type jobRef struct {
	ID           string          `json:"id"`
	Subscription string          `json:"subscription"`
	Status       dispatch.Status `json:"status"`
}

// eventView is an event as the API shows it.
type eventView struct {
	ID            string               `json:"id"`
	ReceivedAt    cloudevent.Timestamp `json:"receivedAt"`
	Duplicate     *bool                `json:"duplicate,omitempty"`
	SchemaVersion string               `json:"schemaVersion,omitempty"`
	Event         cloudevent.Event     `json:"event"`
	DispatchJobs  []jobRef             `json:"dispatchJobs"`
}

func (s *Server) newEventView(ev *event.Event, jobs []*dispatch.Job) eventView {
	refs := make([]jobRef, len(jobs))
	for i, j := range jobs {
		refs[i] = jobRef{ID: j.ID, Subscription: cmp.Or(j.Subscription, j.Code), Status: j.Status}
	}
	return eventView{ID: ev.ID, ReceivedAt: cloudevent.Timestamp(ev.ReceivedAt), SchemaVersion: ev.SchemaVersion, Event: ev.Event, DispatchJobs: refs}
}

// sequenceOf returns the sequence of a subscription from the matching
// index, for ordering an event's jobs.
func (s *Server) sequenceOf(c *gin.Context) func(string) int {
	ix, err := s.cfg.Subscriptions.Index(c.Request.Context())
	if err != nil {
		return nil
	}
	return func(id string) int {
		if sub, ok := ix.ByID(id); ok {
			return sub.Sequence
		}
		return 1 << 30
	}
}

func (s *Server) postEvents(c *gin.Context) error {
	req, err := ingest.Parse(c.Request, s.cfg.Limits)
	if err != nil {
		return err
	}
	if err := s.checkEventClients(c, req); err != nil {
		return err
	}
	ctx := s.cfg.Ingest.ExtractTraceContext(c.Request.Context(), c.Request.Header)
	results, err := s.cfg.Ingest.Ingest(ctx, req)
	if err != nil {
		if _, ok := errors.AsType[*ingest.Error](err); ok {
			return err
		}
		// Nothing of the request can be confirmed stored: the producer must
		// retry, and deduplication makes the retry safe.
		s.cfg.Logger.WarnContext(c.Request.Context(), "ingest failed", "error", err)
		return newProblem(http.StatusServiceUnavailable, "the event could not be stored; retry later")
	}
	views := make([]eventView, len(results))
	allDup, deprecated := true, false
	for i, r := range results {
		v := s.newEventView(r.Event, s.visibleEventJobs(c, r.Jobs))
		if id := r.Event.Event.Ext(clientExtension); id != "" {
			s.cfg.Metrics.ObserveClientEvent(id, map[bool]string{true: "duplicate", false: "accepted"}[r.Duplicate])
		}
		dup := r.Duplicate
		v.Duplicate = &dup
		views[i] = v
		allDup = allDup && r.Duplicate
		deprecated = deprecated || r.Deprecated
	}
	if deprecated {
		c.Header("Deprecation", "true")
	}
	s.wakePullClaims(results)
	status := http.StatusCreated
	if allDup {
		status = http.StatusOK
	}
	if req.Mode == ingest.ModeBatch {
		c.JSON(status, gin.H{"items": views})
		return nil
	}
	c.Header("Location", "/api/events/"+views[0].ID)
	c.JSON(status, views[0])
	return nil
}

func (s *Server) getEvent(c *gin.Context) error {
	ev, err := s.cfg.Store.EventGetByID(c.Request.Context(), c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "event")
	}
	jobs, err := s.cfg.Store.JobListByEvent(c.Request.Context(), ev.ID)
	if err != nil {
		return err
	}
	ingest.SortJobs(jobs, s.sequenceOf(c))
	view := s.newEventView(ev, s.visibleEventJobs(c, jobs))
	if scopeOf(c) != "" {
		// The event's history names every subscription it matched, the
		// platform's too: a scoped caller gets the event without it.
		c.JSON(http.StatusOK, view)
		return nil
	}
	return s.writeWithHistory(c, ev.ID, view) // ?include=history: api/stream.go
}

func (s *Server) listEvents(c *gin.Context) error {
	limit, cursor, err := listParams(c)
	if err != nil {
		return err
	}
	since, err := timeParam(c, "since")
	if err != nil {
		return err
	}
	until, err := timeParam(c, "until")
	if err != nil {
		return err
	}
	p := &event.ListParams{
		Type: c.Query("type"), Source: c.Query("source"), Subject: c.Query("subject"),
		MessageGroup: c.Query("messagegroup"), Since: since, Until: until, Limit: limit, Cursor: cursor,
	}
	for k, v := range c.Request.URL.Query() {
		if name, ok := strings.CutPrefix(k, "ext."); ok && len(v) > 0 {
			if p.Ext == nil {
				p.Ext = map[string]string{}
			}
			p.Ext[name] = v[0]
		}
	}
	if len(p.Ext) > ExtFiltersMax {
		return unprocessable(fmt.Sprintf("at most %d ext.* filters are allowed", ExtFiltersMax), FieldError{
			Pointer: "", Message: fmt.Sprintf("query parameters ext.*: %d given, at most %d allowed", len(p.Ext), ExtFiltersMax),
		})
	}
	if v := c.Query("clientId"); v != "" {
		// API.md §11: an event's client is its clientid extension.
		if p.Ext == nil {
			p.Ext = map[string]string{}
		}
		p.Ext[clientExtension] = v
	}
	pg, err := s.cfg.Store.EventList(c.Request.Context(), p)
	if err != nil {
		return err
	}
	seq := s.sequenceOf(c)
	views := make([]eventView, len(pg.Events))
	for i, ev := range pg.Events {
		jobs, err := s.cfg.Store.JobListByEvent(c.Request.Context(), ev.ID)
		if err != nil {
			return err
		}
		ingest.SortJobs(jobs, seq)
		views[i] = s.newEventView(ev, s.visibleEventJobs(c, jobs))
	}
	writePage(c, views, pg.NextCursor)
	return nil
}

// wakePullClaims wakes this instance's long-polling claims when the
// request stored a due pull job.
func (s *Server) wakePullClaims(results []ingest.Result) {
	for _, r := range results {
		for _, j := range r.Jobs {
			if j.Delivery == dispatch.DeliveryPull && j.Status == dispatch.StatusQueued {
				s.cfg.Pull.NotifyDue()
				return
			}
		}
	}
}

// visibleEventJobs keeps the jobs of an event a scoped caller may see.
func (s *Server) visibleEventJobs(c *gin.Context, jobs []*dispatch.Job) []*dispatch.Job {
	return visibleJobs(s, c, jobs, func(j *dispatch.Job) string { return j.SubscriptionID })
}
