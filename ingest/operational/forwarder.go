package operational

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/ingest"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
)

// Forwarder defaults.
const (
	// BufferDefault is how many operational events wait for their ingest
	// before new ones are dropped.
	BufferDefault = 4096
	// batchMax is the most events of one ingest call.
	batchMax = 100
	// retryWait is the wait before an ingest that failed (store down) is
	// tried again; retries stop when the Forwarder stops.
	retryWait = time.Second
	// drainTimeout bounds the ingest of what is left when the Forwarder
	// stops.
	drainTimeout = 5 * time.Second
)

// Ingester ingests events: the ingest service's gateway door
// (ingest.Service.Gateway), the one that accepts the reserved "hooklane."
// types and "/hooklane" source of operational events.
type Ingester interface {
	Ingest(ctx context.Context, req *ingest.Request) ([]ingest.Result, error)
}

// SubscriptionGetter reads a subscription, to name its client.
type SubscriptionGetter interface {
	SubscriptionGetByID(ctx context.Context, id string) (*subscription.Subscription, error)
}

// ForwarderConfig configures a Forwarder.
type ForwarderConfig struct {
	// Ingest receives the operational events. Required.
	Ingest Ingester
	// Subscriptions, when set, names the client of the subscription an
	// event is about (data.clientId).
	Subscriptions SubscriptionGetter
	// Buffer bounds the events waiting for their ingest. Default
	// BufferDefault.
	Buffer int
	// OnDropFunc, when set, is called for each event dropped because the
	// buffer was full (for metrics).
	OnDropFunc func()
	// Durable leaves every operational event — circuit, subscription and
	// discarded-job ones — to a Relay, which ingests them from the outbox
	// their write stored them in (dispatch.CircuitPolicy.DurableEvents): the
	// Forwarder then ingests nothing, and the gateway runs none.
	Durable bool
	Logger  *slog.Logger
}

// Forwarder ingests the operational status events the job lifecycle
// reports (Observe is its OnEventsFunc) as events of the built-in types,
// in the background. The CloudEvent id is the status event's id, so a
// repeated ingest of one is a duplicate. Delivery to the ingest is best
// effort within the process: an event still waiting in the buffer when the
// process dies is lost, and when the buffer is full new events are dropped
// (with a warning and OnDropFunc) rather than slowing the lifecycle.
type Forwarder struct {
	cfg     ForwarderConfig
	ch      chan cloudevent.Event
	dropped atomic.Int64
}

// NewForwarder returns a Forwarder; run it with Run.
func NewForwarder(cfg ForwarderConfig) *Forwarder {
	if cfg.Buffer <= 0 {
		cfg.Buffer = BufferDefault
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Logger = cfg.Logger.With("component", "operational_events")
	return &Forwarder{cfg: cfg, ch: make(chan cloudevent.Event, cfg.Buffer)}
}

// Observe takes the status events of one lifecycle write (j is the job it
// moved, nil for a circuit or subscription write) and queues the
// operational ones for ingest. It never blocks.
func (f *Forwarder) Observe(j *dispatch.Job, events []stream.Event) {
	for i := range events {
		if f.cfg.Durable && durable(events[i].Type) {
			continue
		}
		ce, ok := toCloudEvent(j, &events[i])
		if !ok {
			continue
		}
		select {
		case f.ch <- ce:
		default:
			if f.dropped.Add(1)%100 == 1 {
				f.cfg.Logger.Warn("operational events dropped: ingest falls behind", "dropped", f.dropped.Load())
			}
			if f.cfg.OnDropFunc != nil {
				f.cfg.OnDropFunc()
			}
		}
	}
}

// toCloudEvent renders a status event as its operational event, when it
// is one. Producer and viewer keys read operational events, so every URL
// in its free text (a circuit's reason and a discarded job's error name
// the failed send's target) is masked by dispatch.MaskTargetsInText.
func toCloudEvent(j *dispatch.Job, e *stream.Event) (cloudevent.Event, bool) {
	typ, ok := typeOf(e.Type)
	if !ok {
		return cloudevent.Event{}, false
	}
	ce := cloudevent.Event{
		SpecVersion: cloudevent.SpecVersion, ID: e.ID, Source: Source, Type: typ, Subject: e.Subject,
		Time: e.Time, DataContentType: "application/json", Extensions: map[string]any{},
	}
	d := e.Data
	var data map[string]any
	if typ == TypeDispatchDiscarded {
		if j == nil || IsOperational(j.Code) {
			return cloudevent.Event{}, false // no news of the news (see the package doc)
		}
		data = map[string]any{"jobId": j.ID, "error": endpoint.MaskTargetsInText(cmpOr(d.Error, "discarded"))}
		set(data, "eventId", j.EventID)
		set(data, "eventType", j.Code)
		set(data, "subscriptionId", j.SubscriptionID)
		set(data, "subscription", j.Subscription)
		set(data, "messageGroup", j.MessageGroup)
		if d.Attempt > 0 {
			data["attempt"] = d.Attempt
		}
		if d.StatusCode > 0 {
			data["statusCode"] = d.StatusCode
		}
		if j.SubscriptionID != "" {
			ce.Extensions[subscription.ExtSubscriptionID] = j.SubscriptionID
		}
	} else {
		data = map[string]any{"subscriptionId": e.Subject, "subscription": d.Subscription, "reason": endpoint.MaskTargetsInText(d.Reason)}
		if d.ClientID != "" {
			data["clientId"] = d.ClientID
		}
		if d.ConsecutiveFailures > 0 {
			data["consecutiveFailures"] = d.ConsecutiveFailures
		}
		if d.NextProbeAt != nil && typ == TypeCircuitOpened {
			data["nextProbeAt"] = cloudevent.FormatTime(*d.NextProbeAt)
		}
		ce.Extensions[subscription.ExtSubscriptionID] = e.Subject
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return cloudevent.Event{}, false
	}
	ce.Data = raw
	return ce, true
}

func set(m map[string]any, key, value string) {
	if value != "" {
		m[key] = value
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Run ingests the queued events, in batches, until ctx ends; then it
// ingests what is left (bounded by a short timeout) and returns nil.
func (f *Forwarder) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drainTimeout)
			defer cancel()
			for batch := f.take(); len(batch) > 0; batch = f.take() {
				f.ingest(dctx, batch)
			}
			return nil
		case ce := <-f.ch:
			batch := append([]cloudevent.Event{ce}, f.take()...)
			f.ingest(ctx, batch)
		}
	}
}

// take returns up to batchMax-1 events already waiting, without blocking.
func (f *Forwarder) take() []cloudevent.Event {
	var out []cloudevent.Event
	for len(out) < batchMax-1 {
		select {
		case ce := <-f.ch:
			out = append(out, ce)
		default:
			return out
		}
	}
	return out
}

// ingest ingests a batch, retrying while the store is unavailable and ctx
// lasts. A batch refused for breaking a rule (an operator archived a
// built-in type) is dropped with a warning.
func (f *Forwarder) ingest(ctx context.Context, batch []cloudevent.Event) {
	f.enrich(ctx, batch)
	for {
		_, err := f.cfg.Ingest.Ingest(ctx, &ingest.Request{Mode: ingest.ModeBatch, Events: batch})
		if err == nil {
			return
		}
		var rule *ingest.Error
		if errors.As(err, &rule) || ctx.Err() != nil {
			f.cfg.Logger.WarnContext(ctx, "operational events not ingested", "events", len(batch), "error", err)
			return
		}
		f.cfg.Logger.WarnContext(ctx, "ingest of operational events failed, retrying", "events", len(batch), "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(retryWait):
		}
	}
}

// enrich names the client of the subscription each subscription event is
// about.
func (f *Forwarder) enrich(ctx context.Context, batch []cloudevent.Event) {
	enrich(ctx, f.cfg.Subscriptions, f.cfg.Logger, batch)
}

// enrich names, through subs (nil: none), the client of the subscription
// each subscription event of batch is about.
func enrich(ctx context.Context, subs SubscriptionGetter, logger *slog.Logger, batch []cloudevent.Event) {
	if subs == nil {
		return
	}
	for i := range batch {
		ce := &batch[i]
		if ce.Type == TypeDispatchDiscarded {
			continue
		}
		sub, err := subs.SubscriptionGetByID(ctx, ce.Subject)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				logger.DebugContext(ctx, "read subscription of operational event", "subscription_id", ce.Subject, "error", err)
			}
			continue
		}
		if sub.ClientID == nil {
			continue
		}
		var data map[string]any
		if json.Unmarshal(ce.Data, &data) != nil {
			continue
		}
		data["clientId"] = *sub.ClientID
		if raw, err := json.Marshal(data); err == nil {
			ce.Data = raw
		}
	}
}

// Dropped returns how many events were dropped because the buffer was full.
func (f *Forwarder) Dropped() int64 { return f.dropped.Load() }
