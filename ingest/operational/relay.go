package operational

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/ingest"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/stream"
)

// Relay defaults.
const (
	// RelayIntervalDefault is how often the relay reads the outbox when
	// nothing wakes it: what another instance, or a process that died
	// before its relay ran, left there is ingested within it.
	RelayIntervalDefault = 2 * time.Second
	// relayBatch is the most outbox events one pass reads.
	relayBatch = 100
)

// RelayConfig configures a Relay.
type RelayConfig struct {
	// Outbox is where circuit transitions and auto-disables store their
	// status events (dispatch.CircuitPolicy.DurableEvents). Required.
	Outbox dispatch.OutboxStore
	// Ingest receives the operational events (ingest.Service.Gateway).
	// Required.
	Ingest Ingester
	// Subscriptions, when set, names the client of the subscription an
	// event is about (data.clientId).
	Subscriptions SubscriptionGetter
	// Jobs, when set, reads the job a dispatch.discarded outbox event is
	// about, for what the status event does not carry (data.subscriptionId
	// and the subscriptionid extension). Without it, or when the job is
	// gone, the event is rendered from the status event alone.
	Jobs JobGetter
	// Interval is the period of the outbox reads nothing woke. Default
	// RelayIntervalDefault.
	Interval time.Duration
	// OnRelayFunc, when set, is called after each pass that ingested
	// events, with their number (for tests and metrics).
	OnRelayFunc func(n int)
	Logger      *slog.Logger
}

// JobGetter reads a job (dispatch.Store's JobGetByID).
type JobGetter interface {
	JobGetByID(ctx context.Context, id string) (*dispatch.Job, error)
}

// Relay turns the operational outbox into events: it reads the status
// events a circuit transition, an auto-disable or a job's discard stored
// with its own write,
// ingests each as its operational event through the gateway's door, and
// deletes it from the outbox only once the ingest stored it (or refused it
// for breaking a rule, which no retry mends). Delivery is at least once: a
// crash between the ingest and the delete, or two instances' relays reading
// the same row, ingest an event twice, and the second is a duplicate —
// the CloudEvent id is the status event's id, the same on every try.
//
// With a Relay running, the Forwarder leaves these types — every
// operational one — to it (ForwarderConfig.Durable).
type Relay struct {
	cfg  RelayConfig
	wake chan struct{}
}

// NewRelay returns a Relay; run it with Run.
func NewRelay(cfg RelayConfig) *Relay {
	if cfg.Interval <= 0 {
		cfg.Interval = RelayIntervalDefault
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Logger = cfg.Logger.With("component", "operational_relay")
	return &Relay{cfg: cfg, wake: make(chan struct{}, 1)}
}

// durable reports whether status events of statusType go through the
// outbox when it is on: the circuit and subscription ones
// (dispatch.CircuitUpdateParams.Outbox, SubscriptionDisableParams.Outbox)
// and a discarded job's (dispatch.JobUpdateParams.Outbox) — every type
// that becomes an operational event.
func durable(statusType string) bool {
	switch statusType {
	case stream.TypeSubscriptionCircuitOpened, stream.TypeSubscriptionCircuitClosed, stream.TypeSubscriptionDisabled,
		stream.TypeDispatchDiscarded:
		return true
	}
	return false
}

// Observe takes the status events of one lifecycle write (the lifecycle's
// OnEventsFunc, beside the Forwarder's) and wakes the relay when one of
// them waits in the outbox. It never blocks.
func (r *Relay) Observe(_ *dispatch.Job, events []stream.Event) {
	for i := range events {
		if durable(events[i].Type) {
			r.Wake()
			return
		}
	}
}

// Wake makes the relay read the outbox now.
func (r *Relay) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run relays at start, on every Wake and every Interval until ctx ends;
// then it returns nil. What is left in the outbox stays there for the next
// start or another instance.
func (r *Relay) Run(ctx context.Context) error {
	tick := time.NewTicker(r.cfg.Interval)
	defer tick.Stop()
	for {
		for {
			n, err := r.RelayOnce(ctx)
			if err != nil {
				if ctx.Err() == nil {
					r.cfg.Logger.WarnContext(ctx, "relay of operational events failed, retrying", "error", err)
				}
				break
			}
			if n < relayBatch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.wake:
		case <-tick.C:
		}
	}
}

// RelayOnce ingests up to one batch of outbox events and deletes those
// stored; it returns how many it read. An event whose ingest failed for
// another reason than a rule (the store is down) stays for the next pass.
func (r *Relay) RelayOnce(ctx context.Context) (int, error) {
	events, err := r.cfg.Outbox.OutboxList(ctx, relayBatch)
	if err != nil {
		return 0, err
	}
	if len(events) == 0 {
		return 0, nil
	}
	done := make([]string, 0, len(events))
	var errs []error
	for i := range events {
		e := &events[i]
		var j *dispatch.Job
		if e.Type == stream.TypeDispatchDiscarded {
			if j, err = r.jobOf(ctx, e); err != nil {
				// The job could not be read (the store is down): the
				// event stays for the next pass.
				errs = append(errs, err)
				continue
			}
		}
		ce, ok := toCloudEvent(j, e)
		if !ok {
			// Not an operational type, or the discard of a job of one (no
			// news of the news): nothing to ingest, nothing to keep.
			done = append(done, e.ID)
			continue
		}
		batch := []cloudevent.Event{ce}
		enrich(ctx, r.cfg.Subscriptions, r.cfg.Logger, batch)
		_, err = r.cfg.Ingest.Ingest(ctx, &ingest.Request{Mode: ingest.ModeBatch, Events: batch})
		var rule *ingest.Error
		switch {
		case err == nil:
			done = append(done, e.ID)
		case errors.As(err, &rule):
			r.cfg.Logger.WarnContext(ctx, "operational event refused, dropped from the outbox", "id", e.ID, "type", ce.Type, "error", err)
			done = append(done, e.ID)
		default:
			errs = append(errs, err)
		}
	}
	if len(done) > 0 {
		if err := r.cfg.Outbox.OutboxDelete(ctx, done); err != nil {
			errs = append(errs, err)
		}
	}
	if len(done) > 0 && r.cfg.OnRelayFunc != nil {
		r.cfg.OnRelayFunc(len(done))
	}
	return len(events), errors.Join(errs...)
}

// jobOf returns the job a dispatch.discarded outbox event is about, for
// toCloudEvent: as stored when RelayConfig.Jobs reads it, else (no reader,
// or the job deleted since) as the status event describes it, without its
// subscription id.
func (r *Relay) jobOf(ctx context.Context, e *stream.Event) (*dispatch.Job, error) {
	if r.cfg.Jobs != nil {
		j, err := r.cfg.Jobs.JobGetByID(ctx, e.Subject)
		if err == nil {
			return j, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("read job %s of outbox event %s: %w", e.Subject, e.ID, err)
		}
	}
	d := &e.Data
	return &dispatch.Job{
		ID: cmpOr(d.JobID, e.Subject), EventID: d.EventID, Code: d.EventType, Subscription: d.Subscription, MessageGroup: d.MessageGroup,
	}, nil
}
