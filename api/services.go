package api

import (
	"github.com/hooklane/hooklane/schema"
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
		Store: cfg.Store, Bindings: cfg.Subscriptions, ValidateCodeFunc: subscription.ValidateEventTypeCode,
		OnChangeFunc: onChange, NowFunc: cfg.NowFunc,
	})
}
