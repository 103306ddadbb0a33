// Package task creates TASK jobs (API.md §5): a one-off delivery that no
// event or subscription stands behind. A task carries the delivery settings
// a subscription does and is checked by the same rules (target, headers,
// endpoint auth and TLS, timeouts, retry, mode, pool), then built and
// queued through the job lifecycle.
package task

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/subscription"
)

// Input is a task as a client writes it.
type Input struct {
	Code           string
	TargetURL      string
	Payload        json.RawMessage
	Subject        string
	MessageGroup   string
	Mode           dispatch.Mode
	DispatchPoolID string
	Headers        map[string]string
	TimeoutSeconds *int
	MaxAgeSeconds  *int
	Retry          *dispatch.Retry
	// Secret signs the deliveries; nil generates one.
	Secret *string
	Auth   *endpoint.Auth
	TLS    *endpoint.TLS
}

// Checker checks delivery settings as a subscription's
// (*subscription.Service).
type Checker interface {
	Check(ctx context.Context, sub *subscription.Subscription) error
}

// Creator stores and queues new jobs (*dispatch.Lifecycle).
type Creator interface {
	Create(ctx context.Context, jobs []*dispatch.Job) error
}

// Config wires a Service.
type Config struct {
	Checker   Checker
	Jobs      Creator
	NewIDFunc func() string
	// NowFunc is the clock. Default time.Now.
	NowFunc func() time.Time
}

// Service creates TASK jobs.
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

// Create checks in, builds its job and stores and queues it. generated is
// the signing secret when the Service made it (the caller shows it once),
// "" when in named one. A task the rules refuse is a
// *subscription.Rejection whose pointers name the task's fields; a job that
// could not be stored is store.ErrUnavailable.
func (s *Service) Create(ctx context.Context, in *Input) (j *dispatch.Job, generated string, err error) {
	probe := settingsOf(in)
	var errs []subscription.FieldError
	if strings.TrimSpace(in.Code) == "" {
		errs = append(errs, subscription.FieldError{Pointer: "/code", Message: "is required"})
	}
	if len(in.Payload) == 0 {
		errs = append(errs, subscription.FieldError{Pointer: "/payload", Message: "is required"})
	}
	if len(errs) > 0 {
		return nil, "", &subscription.Rejection{Detail: "the job is invalid", Errors: errs}
	}
	if err := s.cfg.Checker.Check(ctx, probe); err != nil {
		var rej *subscription.Rejection
		if !errors.As(err, &rej) {
			return nil, "", fmt.Errorf("check task settings: %w", err)
		}
		errs := make([]subscription.FieldError, len(rej.Errors))
		for i, e := range rej.Errors {
			e.Pointer = strings.Replace(e.Pointer, "/target", "/targetUrl", 1)
			errs[i] = e
		}
		return nil, "", &subscription.Rejection{Detail: "the job is invalid", Errors: errs}
	}
	secret := subscription.NewSecret()
	generated = secret
	if in.Secret != nil {
		if _, err := subscription.SecretKey(*in.Secret); err != nil {
			return nil, "", &subscription.Rejection{Detail: "the secret is invalid", Errors: []subscription.FieldError{{Pointer: "/secret", Message: err.Error()}}}
		}
		secret, generated = *in.Secret, ""
	}
	settings := probe.JobSettings()
	settings.SubscriptionID, settings.Subscription, settings.Delivery = "", "", dispatch.DeliveryPush
	j = dispatch.NewTaskJob(&dispatch.TaskSpec{
		ID: s.cfg.NewIDFunc(), Code: in.Code, Subject: in.Subject, MessageGroup: in.MessageGroup,
		Payload: in.Payload, Secret: secret, Auth: in.Auth, TLS: in.TLS, Settings: *settings,
	}, s.cfg.NowFunc().UTC().Truncate(time.Millisecond))
	if err := s.cfg.Jobs.Create(ctx, []*dispatch.Job{j}); err != nil {
		return nil, "", fmt.Errorf("store task job: %w", errors.Join(store.ErrUnavailable, err))
	}
	return j, generated, nil
}

// settingsOf is in's delivery settings as a subscription, with a
// subscription's defaults for what in leaves out.
func settingsOf(in *Input) *subscription.Subscription {
	probe := &subscription.Subscription{}
	probe.ApplyDefaults()
	probe.Code = "task"
	probe.EventTypes = []subscription.Binding{{EventTypeCode: "task:job"}}
	probe.Target, probe.Headers = in.TargetURL, in.Headers
	probe.Auth, probe.TLS = in.Auth, in.TLS
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
	return probe
}
