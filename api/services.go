package api

import (
	"context"
	"errors"
	"fmt"

	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/ingest"
	"github.com/hooklane/hooklane/ingest/task"
	"github.com/hooklane/hooklane/router/webhook"
	"github.com/hooklane/hooklane/subscription"
)

// newCatalog builds the event type catalog the handlers call from the
// ports in cfg; nil when a port it needs is missing (a Server built for
// other routes only, as some tests do: those routes then answer 500).
func newCatalog(cfg *Config) *schema.Catalog {
	if cfg.Store == nil || cfg.Subscriptions == nil {
		return nil
	}
	onChange := func() {}
	if cfg.Registry != nil {
		onChange = cfg.Registry.Invalidate
	}
	return schema.NewCatalog(schema.CatalogConfig{
		Store: cfg.Store, Bindings: cfg.Subscriptions, ValidateCodeFunc: validateEventTypeCode,
		OnChangeFunc: onChange, NowFunc: cfg.NowFunc,
	})
}

// newSubscriptions builds the subscription service the handlers call from
// the ports in cfg; nil when a port it needs is missing, as newCatalog.
func newSubscriptions(cfg *Config) *subscription.Service {
	if cfg.Store == nil || cfg.Jobs == nil || cfg.IDs == nil {
		return nil
	}
	sc := subscription.ServiceConfig{
		Store: cfg.Store, Jobs: cfg.Jobs, NewIDFunc: cfg.IDs.New, Logger: cfg.Logger, NowFunc: cfg.NowFunc,
	}
	if cfg.Subscriptions != nil {
		sc.OnChangeFunc = cfg.Subscriptions.Invalidate
	}
	if !cfg.AllowPrivateTargets {
		resolver := cfg.Resolver
		sc.PublicHostFunc = func(ctx context.Context, host string) (bool, error) {
			err := webhook.CheckTarget(ctx, resolver, host)
			if errors.Is(err, webhook.ErrPrivateTarget) {
				return false, nil
			}
			return err == nil, err
		}
	}
	return subscription.NewService(sc)
}

// newTasks builds the TASK job service the handlers call; nil when a port
// it needs is missing, as newCatalog.
func newTasks(cfg *Config, subs *subscription.Service) *task.Service {
	if subs == nil {
		return nil
	}
	return task.NewService(task.Config{Checker: subs, Jobs: cfg.Jobs, NewIDFunc: cfg.IDs.New, NowFunc: cfg.NowFunc})
}

// validateEventTypeCode checks a new event type's code: its syntax, and
// that it is not under the prefix reserved for the gateway's operational
// events (ingest.ReservedTypePrefix), which the gateway registers itself
// (ingest/operational) and no producer may post.
func validateEventTypeCode(code string) error {
	if ingest.IsReservedType(code) {
		return fmt.Errorf("the prefix %q is reserved for the gateway's own events", ingest.ReservedTypePrefix)
	}
	return subscription.ValidateEventTypeCode(code)
}
