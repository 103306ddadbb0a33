package main

import (
	"context"
	"errors"
	"time"

	"github.com/hooklane/hooklane/api/metrics"
	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
)

// poolLookupTimeout bounds reading a pool definition to name a metric's
// pool label; the router has almost always cached it already.
const poolLookupTimeout = 2 * time.Second

// typeGetter reads an event type.
type typeGetter interface {
	EventTypeGet(ctx context.Context, code string) (*schema.EventType, error)
}

// newMetrics builds the process's metrics: event type labels only for
// registered types, pool labels by pool code, the subscription cache's
// hit ratio.
func newMetrics(st typeGetter, pools *router.Pools, subs *subscription.Cache, hub *stream.Hub) *metrics.Metrics {
	return metrics.New(metrics.Config{
		TypeKnownFunc: func(ctx context.Context, code string) (bool, error) {
			_, err := st.EventTypeGet(ctx, code)
			if errors.Is(err, store.ErrNotFound) {
				return false, nil
			}
			return err == nil, err
		},
		PoolCodeFunc: func(id string) string {
			ctx, cancel := context.WithTimeout(context.Background(), poolLookupTimeout)
			defer cancel()
			p, err := pools.Get(ctx, id)
			if err != nil {
				return "unknown"
			}
			return p.Definition().Code
		},
		Cache:             subs,
		StreamClientsFunc: hub.Clients,
	})
}
