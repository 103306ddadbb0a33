package mongostore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The members of a job document set while it holds status events not yet
// relayed to the statusEvents collection: statusOutboxField (the events)
// and statusPendingField (statusPendingValue, indexed: the relay finds the
// jobs holding some by this string equality, which FerretDB v1 pushes
// down).
const (
	statusOutboxField  = "statusOutbox"
	statusPendingField = "statusOutboxPending"
	statusPendingValue = "pending"
)

// Defaults of the status relay (see statusRelay).
const (
	// StatusRelayIntervalDefault is Config.StatusRelayInterval's default.
	StatusRelayIntervalDefault = 200 * time.Millisecond
	// statusRelaySweep is how often the relay looks for held events
	// without being kicked: those of a process that stopped before its
	// relay moved them.
	statusRelaySweep = 5 * time.Second
	// statusRelayBatch bounds the jobs one relay round moves.
	statusRelayBatch = 500
	// statusRelayRoundTimeout bounds one round.
	statusRelayRoundTimeout = 30 * time.Second
	// statusRelayClearBudget bounds the time a round spends clearing on
	// FerretDB, one job at a time under its write guard (four commands
	// each): the events are in statusEvents before the clear starts, and
	// a long clear would delay the next round's, so the jobs left are
	// cleared by later rounds (their events inserted again meanwhile,
	// the duplicates ignored).
	statusRelayClearBudget = 100 * time.Millisecond
)

// statusHolder is a job document's held status events, with its version.
type statusHolder struct {
	ID      string           `bson:"_id"`
	Version int64            `bson:"version"`
	Outbox  []statusEventDoc `bson:"statusOutbox"`
}

// jobHasStatusOutbox matches the job documents holding status events.
func jobHasStatusOutbox() bson.D {
	return bson.D{{Key: statusPendingField, Value: statusPendingValue}}
}

// statusRelay moves the status events that job writes store inside the
// job's document (JobUpdate, JobInsertMany, EventIngest: one write for the
// job and its events, so a crash cannot keep one without the other) to the
// statusEvents collection, which the stream tails and the history lists.
// A round finds the jobs holding events (one find), inserts their events
// ignoring the ids stored already (one insert) and clears what it moved
// (one bulk update filtered on the version it read: a job written
// meanwhile keeps its events, the next round moves them again, and the
// duplicates are ignored). Every job write kicks it; rounds start at most
// once per interval, so under load one round carries the events of many
// writes. Several instances may relay the same events at once: ids are
// unique, so a second insert of an event is a no-op. Each round of run
// also writes the fannedOutAt marks of the events ingested since the
// last (see fanOutMarks): one updateMany on MongoDB.
type statusRelay struct {
	s        *Store
	interval time.Duration
	kick     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	// mu serializes rounds: a flush's round starts after every write that
	// returned before the flush was called.
	mu sync.Mutex
}

func newStatusRelay(s *Store, interval time.Duration) *statusRelay {
	return &statusRelay{
		s: s, interval: interval,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
}

// poke asks for a round soon; it never blocks.
func (r *statusRelay) poke() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// run relays until close; ctx carries values only (its rounds end with
// close). (Open has run a first round, for what an earlier process left.)
func (r *statusRelay) run(ctx context.Context) {
	base := context.WithoutCancel(ctx)
	defer close(r.done)
	sweep := time.NewTicker(statusRelaySweep)
	defer sweep.Stop()
	last := time.Now()
	for {
		select {
		case <-r.stop:
			return
		case <-r.kick:
		case <-sweep.C:
		}
		if wait := r.interval - time.Since(last); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-r.stop:
				t.Stop()
				return
			case <-t.C:
			}
		}
		last = time.Now()
		rctx, cancel := context.WithTimeout(base, statusRelayRoundTimeout)
		go func() {
			select {
			case <-r.stop:
				cancel()
			case <-rctx.Done():
			}
		}()
		full, uncleared, err := r.round(rctx)
		more := full || uncleared
		if err != nil {
			r.s.logger.WarnContext(base, "status event relay round failed", "error", err)
		}
		markErr := r.s.writeFanOutMarks(rctx)
		cancel()
		if markErr != nil {
			r.s.logger.WarnContext(base, "write fanned-out marks failed", "error", markErr)
		}
		if more || err != nil || markErr != nil {
			r.poke()
		}
	}
}

// close stops run and waits for it.
func (r *statusRelay) close() {
	close(r.stop)
	<-r.done
}

// flush runs a round now, so the events of every job write that returned
// before the call are in statusEvents when it returns nil.
func (r *statusRelay) flush(ctx context.Context) error {
	for {
		full, uncleared, err := r.round(ctx)
		if uncleared {
			r.poke()
		}
		if err != nil || !full {
			return err
		}
	}
}

// round moves the events of up to statusRelayBatch jobs. full reports
// that the batch was full (more may be held); uncleared that some jobs
// keep events relayed already (written meanwhile, or their guard held),
// which a later round clears.
func (r *statusRelay) round(ctx context.Context) (full, uncleared bool, err error) {
	ctx = withCommandTag(ctx, tagRelay)
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.s
	held, err := findAll[statusHolder](ctx, s.jobs, jobHasStatusOutbox(), options.Find().
		SetProjection(bson.D{{Key: "version", Value: 1}, {Key: statusOutboxField, Value: 1}}).
		SetLimit(statusRelayBatch))
	if err != nil {
		return false, false, fmt.Errorf("list held status events: %w", err)
	}
	if len(held) == 0 {
		return false, false, nil
	}
	var docs []any
	for i := range held {
		for j := range held[i].Outbox {
			docs = append(docs, held[i].Outbox[j])
		}
	}
	if _, err := insertIgnoringDuplicates(ctx, s.statusEvents, docs); err != nil {
		return false, false, fmt.Errorf("relay %d status events: %w", len(docs), err)
	}
	full = len(held) == statusRelayBatch
	cleared, err := r.clear(ctx, held)
	if err != nil {
		return full, true, fmt.Errorf("clear relayed status events: %w", err)
	}
	return full, cleared < len(held), nil
}

// clear removes the relayed events from the jobs still at the version
// they were read at, and returns how many it cleared.
func (r *statusRelay) clear(ctx context.Context, held []statusHolder) (int, error) {
	s := r.s
	unset := bson.D{{Key: "$unset", Value: bson.D{{Key: statusOutboxField, Value: ""}, {Key: statusPendingField, Value: ""}}}}
	if !s.writeGuards {
		models := make([]mongo.WriteModel, len(held))
		for i := range held {
			models[i] = mongo.NewUpdateOneModel().
				SetFilter(bson.D{{Key: "_id", Value: held[i].ID}, {Key: "version", Value: held[i].Version}}).
				SetUpdate(unset)
		}
		res, err := s.jobs.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
		if err != nil {
			return 0, translate(ctx, err)
		}
		return int(res.MatchedCount), nil
	}
	// FerretDB runs an update as a read then a write: a job write in
	// between would be undone. So each clear takes the job's write guard
	// of its next version step, as a JobUpdate does (which waits for it
	// briefly, see replaceJob), and leaves the version as it is.
	cleared := 0
	deadline := time.Now().Add(statusRelayClearBudget)
	for i := range held {
		if time.Now().After(deadline) {
			break
		}
		ok, err := r.clearGuarded(withCommandTagIf(ctx, i > 0, tagFerretDB), &held[i], unset)
		if err != nil {
			return cleared, err
		}
		if ok {
			cleared++
		}
	}
	return cleared, nil
}

// clearGuarded clears one job's relayed events under its write guard;
// false when the guard is held or the job moved on.
func (r *statusRelay) clearGuarded(ctx context.Context, h *statusHolder, unset bson.D) (bool, error) {
	s := r.s
	key := fmt.Sprintf("%s/%s@%d", s.jobs.Name(), h.ID, h.Version+1)
	acquired, err := s.acquireGuard(ctx, key)
	if err != nil || !acquired {
		return false, err
	}
	defer s.releaseGuard(ctx, key)
	var cur statusHolder
	err = s.jobs.FindOne(withCommandTag(ctx, tagGuard), bson.D{{Key: "_id", Value: h.ID}},
		options.FindOne().SetProjection(bson.D{{Key: "version", Value: 1}})).Decode(&cur)
	if err != nil {
		return false, translate(ctx, err)
	}
	if cur.Version != h.Version {
		return false, nil
	}
	if _, err := s.jobs.UpdateOne(ctx, bson.D{{Key: "_id", Value: h.ID}}, unset); err != nil {
		return false, translate(ctx, err)
	}
	return true, nil
}

// withCommandTagIf is withCommandTag when cond holds, else ctx.
func withCommandTagIf(ctx context.Context, cond bool, tag string) context.Context {
	if cond {
		return withCommandTag(ctx, tag)
	}
	return ctx
}

// holdStatusEvents puts events in doc's status outbox.
func holdStatusEvents(doc *jobDoc, events []statusEventDoc) {
	if len(events) == 0 {
		return
	}
	doc.StatusOutbox = append(doc.StatusOutbox, events...)
	doc.StatusPending = statusPendingValue
}
