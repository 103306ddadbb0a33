// Package ingest accepts CloudEvents: it parses the three HTTP content
// modes, validates each event, deduplicates it, matches it against the
// subscriptions, stores it with its dispatch jobs, and hands the jobs to the
// queue. An event is acknowledged only once it and its jobs are stored.
package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
)

// Validator checks an event's type and data (API.md §1 steps 3 and 4).
type Validator interface {
	Validate(ctx context.Context, ev *cloudevent.Event) (schema.Resolution, error)
}

// Matcher returns the subscriptions an event matches, in sequence order.
type Matcher interface {
	Match(ctx context.Context, ev *cloudevent.Event, version string) ([]*subscription.Subscription, error)
}

// Jobs is what ingest needs of the job lifecycle (*dispatch.Lifecycle).
type Jobs interface {
	// Ingest stores accepted events with their jobs and status events
	// (dispatch.Store.EventIngest's rules).
	Ingest(ctx context.Context, p *dispatch.EventIngestParams) ([]dispatch.EventIngestResult, error)
	// Insert stores jobs with their creation status events and extra
	// status events, idempotently.
	Insert(ctx context.Context, jobs []*dispatch.Job, extra ...stream.Event) error
	// Send puts stored QUEUED push jobs on the queue; events are their
	// events, carried in the jobs' messages.
	Send(ctx context.Context, jobs []*dispatch.Job, events ...*event.Event) (int, error)
	// CreationEvents returns the status events of a job's creation.
	CreationEvents(j *dispatch.Job, now time.Time) []stream.Event
}

// ServiceStore is what the service needs of the store.
type ServiceStore interface {
	EventGetByID(ctx context.Context, id string) (*event.Event, error)
	EventMarkFannedOut(ctx context.Context, ids []string, at time.Time) error
	JobListByEvent(ctx context.Context, eventID string) ([]*dispatch.Job, error)
}

// Config configures a Service.
type Config struct {
	Store     ServiceStore
	Validator Validator
	Matcher   Matcher
	Jobs      Jobs
	IDs       *idgen.Generator
	Logger    *slog.Logger
	NowFunc   func() time.Time
	// OnIngestFunc, when set, is called once per event of a request that
	// reached validation, with its type, its outcome (OutcomeAccepted,
	// OutcomeDuplicate, OutcomeRejected, OutcomeFailed) and the number of
	// jobs stored for it. For metrics; it must not block.
	OnIngestFunc func(ctx context.Context, eventType, outcome string, jobs int)
	// TracerProvider, when set, traces each ingest request: a SERVER span
	// with children for validation, matching, the store write and the queue
	// send, whose context the jobs keep (dispatch.Job.TraceParent). Nil is
	// tracing off: no span is started and nothing is allocated for it.
	TracerProvider trace.TracerProvider
}

// Outcomes reported to Config.OnIngestFunc.
const (
	// OutcomeAccepted is a new event, stored with its jobs.
	OutcomeAccepted = "accepted"
	// OutcomeDuplicate is an event whose dedup key was already stored.
	OutcomeDuplicate = "duplicate"
	// OutcomeRejected is an event of a request refused for breaking a rule
	// (422): every event of a refused batch counts.
	OutcomeRejected = "rejected"
	// OutcomeFailed is an event of a request that could not be confirmed
	// (store or matching failure).
	OutcomeFailed = "failed"
)

// Service runs the ingest pipeline.
type Service struct {
	cfg Config
	// tracer is nil when tracing is off.
	tracer trace.Tracer
}

// New returns a Service.
func New(cfg Config) *Service {
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{cfg: cfg}
	if cfg.TracerProvider != nil {
		s.tracer = cfg.TracerProvider.Tracer(tracerName)
	}
	return s
}

// Result is the outcome of one accepted event.
type Result struct {
	Event     *event.Event
	Duplicate bool
	Jobs      []*dispatch.Job
	// Deprecated is true when the data was validated against a DEPRECATED
	// schema version.
	Deprecated bool
}

// Ingest validates every event of the request (a batch as a whole: one bad
// item rejects all and nothing is stored), then stores the events with their
// jobs and queues the jobs. It returns an *Error for input that breaks a
// rule; any other error means nothing of the request can be confirmed.
//
// Ingest is the producers' door (POST /api/events, every key, admin keys
// included): an event of a type under the reserved prefix "hooklane." or of
// the reserved source "/hooklane" (or under it) is refused with 422 at its
// /type or /source, since only the gateway sends operational events
// (API.md §12). The gateway's own events come in through Gateway.
func (s *Service) Ingest(ctx context.Context, req *Request) ([]Result, error) {
	if err := reservedViolations(req); err != nil {
		ctx, span := s.startRequest(ctx, req)
		endRequest(span, nil, err)
		if s.cfg.OnIngestFunc != nil {
			s.report(ctx, req, nil, err)
		}
		return nil, err
	}
	return s.ingestAs(ctx, req)
}

// Gateway returns the door of the gateway's own operational events: an
// Ingester whose Ingest is Service.Ingest without the reserved-name rule.
// It is reachable by a Go call only (package operational's Forwarder, wired
// in cmd/hooklane), never by an HTTP request: no header or key can forge it.
func (s *Service) Gateway() GatewayIngester { return GatewayIngester{s: s} }

// GatewayIngester ingests the gateway's own events (see Service.Gateway).
type GatewayIngester struct{ s *Service }

// Ingest ingests req as Service.Ingest does, the reserved type prefix and
// source allowed.
func (g GatewayIngester) Ingest(ctx context.Context, req *Request) ([]Result, error) {
	return g.s.ingestAs(ctx, req)
}

// The names reserved for the gateway's operational events.
const (
	// ReservedTypePrefix starts the type of every operational event.
	ReservedTypePrefix = "hooklane."
	// ReservedSource is the source of every operational event.
	ReservedSource = "/hooklane"
)

// ValidateEventTypeCode checks the code of an event type being registered:
// its syntax (event.ValidateTypeCode), and that it is not under
// the prefix reserved for the gateway's operational events, which the
// gateway registers itself (ingest/operational) and no producer may post.
// It is the schema catalog's ValidateCodeFunc.
func ValidateEventTypeCode(code string) error {
	if IsReservedType(code) {
		return fmt.Errorf("the prefix %q is reserved for the gateway's own events", ReservedTypePrefix)
	}
	return event.ValidateTypeCode(code)
}

// IsReservedType reports whether an event type is reserved for the
// gateway (compared without regard to case).
func IsReservedType(typ string) bool {
	return len(typ) >= len(ReservedTypePrefix) && strings.EqualFold(typ[:len(ReservedTypePrefix)], ReservedTypePrefix)
}

// IsReservedSource reports whether a source is the gateway's ("/hooklane"
// or a path under it, compared without regard to case).
func IsReservedSource(src string) bool {
	n := len(ReservedSource)
	return len(src) >= n && strings.EqualFold(src[:n], ReservedSource) && (len(src) == n || src[n] == '/')
}

// reservedViolations returns a 422 *Error naming every event of req whose
// type or source is reserved for the gateway, nil when there is none.
func reservedViolations(req *Request) error {
	var violations []Violation
	for i := range req.Events {
		ev := &req.Events[i]
		if IsReservedType(ev.Type) {
			violations = append(violations, Violation{
				Pointer: req.pointer(i) + "/type",
				Message: "the type prefix " + ReservedTypePrefix + " is reserved for the gateway's operational events",
			})
		}
		if IsReservedSource(ev.Source) {
			violations = append(violations, Violation{
				Pointer: req.pointer(i) + "/source",
				Message: "the source " + ReservedSource + " is reserved for the gateway's operational events",
			})
		}
	}
	if len(violations) == 0 {
		return nil
	}
	return unprocessable("an event uses a type or source reserved for the gateway", violations...)
}

func (s *Service) ingestAs(ctx context.Context, req *Request) ([]Result, error) {
	ctx, span := s.startRequest(ctx, req)
	results, err := s.ingest(ctx, req)
	endRequest(span, results, err)
	if s.cfg.OnIngestFunc != nil {
		s.report(ctx, req, results, err)
	}
	return results, err
}

// report tells OnIngestFunc the outcome of every event of req.
func (s *Service) report(ctx context.Context, req *Request, results []Result, err error) {
	outcome := OutcomeFailed
	if _, ok := errors.AsType[*Error](err); ok {
		outcome = OutcomeRejected
	}
	for i := range req.Events {
		switch {
		case err != nil:
			s.cfg.OnIngestFunc(ctx, req.Events[i].Type, outcome, 0)
		case results[i].Duplicate:
			s.cfg.OnIngestFunc(ctx, req.Events[i].Type, OutcomeDuplicate, 0)
		default:
			s.cfg.OnIngestFunc(ctx, req.Events[i].Type, OutcomeAccepted, len(results[i].Jobs))
		}
	}
}

func (s *Service) ingest(ctx context.Context, req *Request) ([]Result, error) {
	now := s.cfg.NowFunc().UTC().Truncate(time.Millisecond)
	results := make([]Result, len(req.Events))
	items := make([]dispatch.EventIngestItem, len(req.Events))
	var violations []Violation
	for i := range req.Events {
		ev := &req.Events[i]
		vctx, span := s.startChild(ctx, "ingest.validate")
		res, err := s.cfg.Validator.Validate(vctx, ev)
		endChild(span, err)
		if err != nil {
			var rej *schema.Rejection
			if !errors.As(err, &rej) {
				return nil, fmt.Errorf("validate event %d: %w", i, err)
			}
			for _, v := range rej.Violations {
				violations = append(violations, Violation{Pointer: req.pointer(i) + v.Pointer, Message: v.Message})
			}
			if len(rej.Violations) == 0 {
				violations = append(violations, Violation{Pointer: req.pointer(i), Message: rej.Detail})
			}
			continue
		}
		if len(violations) > 0 {
			continue // the request fails anyway; only collect violations
		}
		if ev.Time.IsZero() {
			ev.Time = now
		}
		stored := &event.Event{
			ID:            s.cfg.IDs.New(),
			ReceivedAt:    now,
			DedupKey:      DedupKey(ev),
			Event:         *ev,
			SchemaVersion: res.Version,
		}
		mctx, span := s.startChild(ctx, "ingest.match")
		subs, err := s.cfg.Matcher.Match(mctx, ev, res.Version)
		endChild(span, err)
		if err != nil {
			return nil, fmt.Errorf("match event %d: %w", i, err)
		}
		items[i] = s.buildItem(stored, subs, now)
		s.traceJobs(ctx, items[i].Jobs)
		results[i] = Result{Event: stored, Jobs: items[i].Jobs, Deprecated: res.Deprecated}
	}
	if len(violations) > 0 {
		detail := "the event does not satisfy its event type"
		if req.Mode == ModeBatch {
			detail = "events of the batch do not satisfy their event types; nothing was stored"
		}
		return nil, unprocessable(detail, violations...)
	}
	sctx, span := s.startChild(ctx, "ingest.store")
	outcomes, err := s.cfg.Jobs.Ingest(sctx, &dispatch.EventIngestParams{Items: items})
	endChild(span, err)
	if err != nil {
		return nil, fmt.Errorf("store events: %w", err)
	}
	var toQueue []*dispatch.Job
	var queuedEvents []*event.Event
	for i, o := range outcomes {
		if !o.Duplicate {
			queuedEvents = append(queuedEvents, results[i].Event)
			for _, j := range results[i].Jobs {
				if j.Status == dispatch.StatusQueued && j.Delivery != dispatch.DeliveryPull {
					toQueue = append(toQueue, j)
				}
			}
			continue
		}
		orig, err := s.cfg.Store.EventGetByID(ctx, o.ExistingID)
		if err != nil {
			return nil, fmt.Errorf("get original of duplicate event %d: %w", i, err)
		}
		if orig.FannedOutAt == nil {
			// The first request stored the event but not yet its jobs: it
			// died in between (killed, cut off) or is still writing them.
			// Finish the fan-out before answering, so that the producer's
			// next event of a message group cannot overtake this one's jobs
			// (the fan-out poller would create them only later). Idempotent
			// with the first request and the poller: the job ids are derived.
			if _, err := s.FanOut(ctx, orig); err != nil {
				return nil, fmt.Errorf("complete fan-out of duplicate event %d: %w", i, err)
			}
		}
		jobs, err := s.cfg.Store.JobListByEvent(ctx, orig.ID)
		if err != nil {
			return nil, fmt.Errorf("list jobs of event %s: %w", orig.ID, err)
		}
		SortJobs(jobs, nil)
		// A duplicate was validated like a new event: a DEPRECATED version
		// it names still earns the Deprecation header.
		results[i] = Result{Event: orig, Duplicate: true, Jobs: jobs, Deprecated: results[i].Deprecated}
		if suspects := unsentSuspects(jobs, now); len(suspects) > 0 {
			toQueue = append(toQueue, suspects...)
			queuedEvents = append(queuedEvents, orig)
		}
	}
	if len(toQueue) > 0 {
		qctx, span := s.startChild(ctx, "ingest.enqueue")
		n, err := s.cfg.Jobs.Send(qctx, toQueue, queuedEvents...)
		endChild(span, err)
		if n > 0 {
			s.cfg.Logger.WarnContext(ctx, "jobs left pending after queue send failure", "jobs", n, "error", err)
		}
	}
	return results, nil
}

// resendAfter is how old a never-attempted QUEUED job must be before a
// producer's retry of its event sends it to the queue again. The first
// request may have stored the jobs and then died (killed, or cut off)
// before sending them; the retry is the earliest moment anyone notices.
// Sending twice is harmless: the queue deduplicates the same queuing
// (same dedup id) and the router drops a message whose job moved on.
const resendAfter = 5 * time.Second

// unsentSuspects returns the push jobs of a duplicate's original that may
// never have reached the queue: QUEUED, never attempted, and older than
// resendAfter.
func unsentSuspects(jobs []*dispatch.Job, now time.Time) []*dispatch.Job {
	var out []*dispatch.Job
	for _, j := range jobs {
		if j.Status == dispatch.StatusQueued && j.AttemptCount == 0 && j.Delivery != dispatch.DeliveryPull &&
			now.Sub(j.UpdatedAt) >= resendAfter {
			out = append(out, j)
		}
	}
	return out
}

// FanOut creates the jobs of a stored event that was not fanned out (a crash
// between storing it and its jobs): it matches the event again, stores the
// jobs idempotently, marks the event and queues the jobs. It returns how
// many jobs it stored.
func (s *Service) FanOut(ctx context.Context, ev *event.Event) (int, error) {
	now := s.cfg.NowFunc().UTC().Truncate(time.Millisecond)
	subs, err := s.cfg.Matcher.Match(ctx, &ev.Event, ev.SchemaVersion)
	if err != nil {
		return 0, fmt.Errorf("match event %s: %w", ev.ID, err)
	}
	jobs := s.buildJobs(ev, subs, now)
	if err := s.cfg.Jobs.Insert(ctx, jobs, s.acceptedEvent(ev, subs, now)); err != nil {
		return 0, fmt.Errorf("store jobs of event %s: %w", ev.ID, err)
	}
	if err := s.cfg.Store.EventMarkFannedOut(ctx, []string{ev.ID}, now); err != nil {
		return 0, fmt.Errorf("mark event %s fanned out: %w", ev.ID, err)
	}
	// Jobs already stored by an earlier try keep their stored state; queue
	// only what this call wrote as QUEUED, re-read to skip moved ones.
	stored, err := s.cfg.Store.JobListByEvent(ctx, ev.ID)
	if err != nil {
		return 0, fmt.Errorf("list jobs of event %s: %w", ev.ID, err)
	}
	var toQueue []*dispatch.Job
	for _, j := range stored {
		if j.Status == dispatch.StatusQueued && j.Delivery != dispatch.DeliveryPull && j.AttemptCount == 0 {
			toQueue = append(toQueue, j)
		}
	}
	SortJobs(toQueue, nil)
	if n, err := s.cfg.Jobs.Send(ctx, toQueue, ev); n > 0 {
		s.cfg.Logger.WarnContext(ctx, "jobs left pending after queue send failure", "event_id", ev.ID, "jobs", n, "error", err)
	}
	return len(jobs), nil
}

// buildItem creates the jobs and status events of an accepted event.
func (s *Service) buildItem(ev *event.Event, subs []*subscription.Subscription, now time.Time) dispatch.EventIngestItem {
	jobs := s.buildJobs(ev, subs, now)
	events := make([]stream.Event, 0, 1+2*len(jobs))
	events = append(events, s.acceptedEvent(ev, subs, now))
	for _, j := range jobs {
		events = append(events, s.cfg.Jobs.CreationEvents(j, now)...)
	}
	return dispatch.EventIngestItem{Event: ev, Jobs: jobs, StatusEvents: events}
}

// buildJobs creates the jobs of an event for the subscriptions it matched.
func (s *Service) buildJobs(ev *event.Event, subs []*subscription.Subscription, now time.Time) []*dispatch.Job {
	jobs := make([]*dispatch.Job, 0, len(subs))
	for _, sub := range subs {
		jobs = append(jobs, dispatch.NewEventJob(ev, sub.JobSettings(), now))
	}
	return jobs
}

// acceptedEvent is the event.accepted status event of an event.
func (s *Service) acceptedEvent(ev *event.Event, subs []*subscription.Subscription, now time.Time) stream.Event {
	codes := make([]string, len(subs))
	for i, sub := range subs {
		codes[i] = sub.Code
	}
	return stream.Event{
		ID: s.cfg.IDs.New(), Type: stream.TypeEventAccepted, Time: now, Subject: ev.ID,
		Data: stream.Data{EventID: ev.ID, EventType: ev.Event.Type, Subscriptions: codes},
	}
}

// DedupKey is the deduplication key of an event: its source with its
// deduplicationid extension, or else with its id.
func DedupKey(ev *cloudevent.Event) string {
	key := ev.Source + "\x00" + cmp.Or(ev.Ext(cloudevent.ExtDeduplicationID), ev.ID)
	if c := ev.Ext("clientid"); c != "" {
		// Clients deduplicate apart (API.md §11): one client's event is
		// never another's duplicate. Client-less keys keep their form.
		key = "clientid\x00" + c + "\x00" + key
	}
	return key
}

// SortJobs orders jobs as responses list them: by subscription sequence
// (looked up with seq; nil treats all as equal), then subscription code.
func SortJobs(jobs []*dispatch.Job, seq func(subscriptionID string) int) {
	slices.SortStableFunc(jobs, func(a, b *dispatch.Job) int {
		if seq != nil {
			if c := cmp.Compare(seq(a.SubscriptionID), seq(b.SubscriptionID)); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.Subscription, b.Subscription)
	})
}
