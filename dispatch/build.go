package dispatch

import (
	"cmp"
	"time"

	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
)

// Settings are the delivery settings a subscription gives each of its jobs
// (API.md §3); a TASK job carries its own.
type Settings struct {
	SubscriptionID string
	// Subscription is the subscription's code.
	Subscription   string
	Target         string
	Headers        map[string]string
	Mode           Mode
	Delivery       Delivery
	DispatchPoolID string
	TimeoutSeconds int
	MaxAgeSeconds  int
	DelaySeconds   int
	DataOnly       bool
	Retry          Retry
}

// NewEventJob builds the job of stored event ev for the subscription whose
// settings are s, created at now: QUEUED, or PENDING until its delay ends.
// Its id is derived from (event, subscription), so building it twice gives
// the same job and storing it twice stores it once.
func NewEventJob(ev *event.Event, s *Settings, now time.Time) *Job {
	j := newJob(s, now)
	j.ID = idgen.Derived(ev.ReceivedAt, ev.ID, s.SubscriptionID)
	j.Kind = KindEvent
	j.Code = ev.Event.Type
	j.Subject = ev.Event.Subject
	j.EventID = ev.ID
	j.CorrelationID = ev.Event.Ext(cloudevent.ExtCorrelationID)
	j.MessageGroup = MessageGroup(s.Subscription, &ev.Event)
	return j
}

// TaskSpec is a TASK job as posted to POST /api/dispatch-jobs (API.md §5),
// validated by the caller.
type TaskSpec struct {
	// ID is the job's id (a new ULID).
	ID           string
	Code         string
	Subject      string
	MessageGroup string
	// Payload is the webhook body (JSON).
	Payload []byte
	// Secret signs the deliveries.
	Secret string
	// Auth and TLS authenticate the deliveries to the target; nil for
	// none.
	Auth     *endpoint.Auth
	TLS      *endpoint.TLS
	Settings Settings
}

// NewTaskJob builds a TASK job, QUEUED at now.
func NewTaskJob(t *TaskSpec, now time.Time) *Job {
	j := newJob(&t.Settings, now)
	j.ID = t.ID
	j.Kind = KindTask
	j.Code = t.Code
	j.Subject = t.Subject
	j.MessageGroup = t.MessageGroup
	j.Payload = t.Payload
	j.Secret = t.Secret
	j.Auth, j.TLS = t.Auth, t.TLS
	return j
}

// newJob builds the part of a job its settings decide.
func newJob(s *Settings, now time.Time) *Job {
	retry := s.Retry.WithDefaults()
	j := &Job{
		SubscriptionID: s.SubscriptionID,
		Subscription:   s.Subscription,
		TargetURL:      s.Target,
		Mode:           cmp.Or(s.Mode, ModeImmediate),
		Delivery:       cmp.Or(s.Delivery, DeliveryPush),
		DispatchPoolID: s.DispatchPoolID,
		Headers:        s.Headers,
		TimeoutSeconds: cmp.Or(s.TimeoutSeconds, TimeoutSecondsDefault),
		MaxAgeSeconds:  cmp.Or(s.MaxAgeSeconds, MaxAgeSecondsDefault),
		DataOnly:       s.DataOnly,
		Retry:          retry,
		Status:         StatusQueued,
		MaxAttempts:    retry.MaxAttempts,
		Attempts:       []Attempt{},
		CreatedAt:      now,
		UpdatedAt:      now,
		Version:        1,
	}
	if s.DelaySeconds > 0 {
		due := now.Add(time.Duration(s.DelaySeconds) * time.Second)
		j.Status = StatusPending
		j.NextAttemptAt = &due
	}
	return j
}

// MessageGroup is a job's message group: "{subscription code}:{event
// messagegroup}", falling back to the event subject; "" when the event has
// neither.
func MessageGroup(subCode string, ev *cloudevent.Event) string {
	g := cmp.Or(ev.Ext(cloudevent.ExtMessageGroup), ev.Subject)
	if g == "" {
		return ""
	}
	return subCode + ":" + g
}
