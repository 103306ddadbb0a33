// Package embedded is the embedded store of the gateway: one directory
// (./data by default) holding the control plane in SQLite
// (storage/sqlitestore, hooklane.db: event types, subscriptions, clients,
// tokens, pools, circuits, health, replays) and the data plane in Pebble
// (storage/pebblestore, events/: events, jobs, status events). Store
// implements every storage port by sending each method to the plane that
// holds its records.
//
// # Writes across the planes
//
// CircuitUpdate and SubscriptionDisable change a control-plane record and
// write status events (the data plane) with the change. SQLite writes them
// together, the status events into its own status_events table, which
// serves as an outbox: the store then copies them into Pebble and deletes
// them from SQLite. A crash between the steps leaves them in the outbox,
// and Open moves what it finds there before it returns: nothing is lost,
// a status event may at worst appear late.
//
// # In-place upgrade
//
// A directory written by a release before the data plane moved holds the
// events, jobs and status events in hooklane.db. Open copies them into
// Pebble in pages (events, then jobs with their secrets and versions as
// stored, then status events), sets the marker "upgraded" in Pebble, and
// only then deletes them from SQLite. A crash during the copy leaves no
// marker: the next Open copies again, skipping what is there already. A
// crash after the marker leaves rows in SQLite that the next Open deletes.
package embedded

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/storage/pebblestore"
	"github.com/hooklane/hooklane/storage/secretbox"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription/replay"
)

// The files of the directory.
const (
	// SQLiteFile is the control plane's database file.
	SQLiteFile = "hooklane.db"
	// PebbleDir is the data plane's directory.
	PebbleDir = "events"
)

// Config configures a Store.
type Config struct {
	// Dir is the data directory; it is created when missing. Required.
	Dir string
	// Logger receives the store's logs; nil discards them.
	Logger *slog.Logger
	// NowFunc is the clock; nil means time.Now.
	NowFunc func() time.Time
	// Synchronous is the durability of a commit, for both planes:
	// sqlitestore.SynchronousFull (the default, also for "") fsyncs every
	// commit, so a 201 survives a power loss; sqlitestore.SynchronousNormal
	// survives a crash of the process only.
	Synchronous string
	// CommitWindow is the SQLite writer's commit window
	// (sqlitestore.Config.CommitWindow).
	CommitWindow time.Duration
	// Box seals the secrets both planes store; nil stores them in plain
	// text.
	Box *secretbox.Box
}

// Store is the embedded store. The control plane's methods are SQLite's;
// the data plane's are defined below and sent to Pebble.
type Store struct {
	*sqlitestore.Store

	data   *pebblestore.Store
	logger *slog.Logger
	cfg    Config
}

// Open opens both planes in cfg.Dir, moves what the SQLite file holds of
// the data plane into Pebble (the in-place upgrade, and the outbox of
// status events), and returns the store.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Dir == "" {
		return nil, errors.New("open embedded store: Dir is required")
	}
	if err := os.MkdirAll(cfg.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("open embedded store: create %s: %w", cfg.Dir, err)
	}
	logger := cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	syncMode := cmp.Or(cfg.Synchronous, sqlitestore.SynchronousFull)
	sq, err := openSQLite(ctx, &cfg, logger)
	if err != nil {
		return nil, fmt.Errorf("open embedded store: %w", err)
	}
	pb, err := pebblestore.Open(ctx, pebblestore.Config{
		Dir: filepath.Join(cfg.Dir, PebbleDir), Logger: logger, NowFunc: cfg.NowFunc,
		NoSync: syncMode == sqlitestore.SynchronousNormal, Box: cfg.Box,
	})
	if err != nil {
		_ = sq.Close()
		return nil, fmt.Errorf("open embedded store: %w", err)
	}
	s := &Store{Store: sq, data: pb, logger: logger.With("component", "embedded"), cfg: cfg}
	if err := s.upgrade(ctx); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("open embedded store: %w", err)
	}
	return s, nil
}

func openSQLite(ctx context.Context, cfg *Config, logger *slog.Logger) (*sqlitestore.Store, error) {
	s, err := sqlitestore.Open(ctx, sqlitestore.Config{
		Path: filepath.Join(cfg.Dir, SQLiteFile), Logger: logger, NowFunc: cfg.NowFunc,
		Synchronous: cmp.Or(cfg.Synchronous, sqlitestore.SynchronousFull), CommitWindow: cfg.CommitWindow, Box: cfg.Box,
	})
	if err != nil {
		return nil, fmt.Errorf("open control plane: %w", err)
	}
	return s, nil
}

// Share returns another Store on the same directory, sealing and opening
// secrets with box: one process can open Pebble's directory once
// (pebblestore.Store.Share). Tests use it to read one directory with
// several keys at once.
func (s *Store) Share(ctx context.Context, box *secretbox.Box) (*Store, error) {
	data, err := s.data.Share(box)
	if err != nil {
		return nil, fmt.Errorf("share embedded store: %w", err)
	}
	cfg := s.cfg
	cfg.Box = box
	sq, err := openSQLite(ctx, &cfg, s.logger)
	if err != nil {
		_ = data.Close()
		return nil, fmt.Errorf("share embedded store: %w", err)
	}
	return &Store{Store: sq, data: data, logger: s.logger, cfg: cfg}, nil
}

// Data returns the data plane.
func (s *Store) Data() *pebblestore.Store { return s.data }

// Ping reports whether both planes answer.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.Store.Ping(ctx); err != nil {
		return fmt.Errorf("ping control plane: %w", err)
	}
	if err := s.data.Ping(ctx); err != nil {
		return fmt.Errorf("ping data plane: %w", err)
	}
	return nil
}

// Close closes both planes. Every later call returns store.ErrClosed; Close
// itself may be called again and then returns nil.
func (s *Store) Close() error {
	if err := errors.Join(s.data.Close(), s.Store.Close()); err != nil {
		return fmt.Errorf("close embedded store: %w", err)
	}
	return nil
}

// SecretSealAll seals the plain secrets of both planes (the subscriptions'
// in SQLite, the jobs' in Pebble) and returns what it found in both.
func (s *Store) SecretSealAll(ctx context.Context) (secretbox.Census, error) {
	c, err := s.Store.SecretSealAll(ctx)
	if err != nil {
		return c, err
	}
	d, err := s.data.SecretSealAll(ctx)
	c.Sealed += d.Sealed
	c.Plain += d.Plain
	return c, err
}

// CircuitUpdate writes the circuit with its status events (SQLite's
// outbox), then moves the status events to the data plane.
func (s *Store) CircuitUpdate(ctx context.Context, p *dispatch.CircuitUpdateParams) error {
	if err := s.Store.CircuitUpdate(ctx, p); err != nil {
		return err
	}
	s.moveStatusEvents(ctx, p.Events)
	return nil
}

// SubscriptionDisable pauses the subscription with its status events
// (SQLite's outbox), then moves the status events to the data plane.
func (s *Store) SubscriptionDisable(ctx context.Context, p *dispatch.SubscriptionDisableParams) (bool, error) {
	changed, err := s.Store.SubscriptionDisable(ctx, p)
	if err != nil || !changed {
		return changed, err
	}
	s.moveStatusEvents(ctx, p.Events)
	return true, nil
}

// moveStatusEvents copies status events from SQLite's outbox to Pebble and
// deletes them from the outbox. The change they describe is committed
// already: a failure here is logged, and the next Open moves them.
func (s *Store) moveStatusEvents(ctx context.Context, events []stream.Event) {
	if len(events) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if err := s.data.StatusEventInsertMany(ctx, events); err != nil {
		s.logger.WarnContext(ctx, "move status events to the data plane; the next start moves them", "error", err)
		return
	}
	ids := make([]string, len(events))
	for i := range events {
		ids[i] = events[i].ID
	}
	if err := s.StatusEventDeleteIDs(ctx, ids); err != nil {
		s.logger.WarnContext(ctx, "delete moved status events from the outbox", "error", err)
	}
}

// EventIngest stores events with their jobs and status events (Pebble).
func (s *Store) EventIngest(ctx context.Context, p *dispatch.EventIngestParams) ([]dispatch.EventIngestResult, error) {
	return s.data.EventIngest(ctx, p)
}

// EventGetByID returns one event (Pebble).
func (s *Store) EventGetByID(ctx context.Context, id string) (*event.Event, error) {
	return s.data.EventGetByID(ctx, id)
}

// EventList returns one page of events (Pebble).
func (s *Store) EventList(ctx context.Context, p *event.ListParams) (*event.Page, error) {
	return s.data.EventList(ctx, p)
}

// EventListNotFannedOut returns events not marked fanned out (Pebble).
func (s *Store) EventListNotFannedOut(ctx context.Context, p *event.ListNotFannedOutParams) ([]*event.Event, error) {
	return s.data.EventListNotFannedOut(ctx, p)
}

// EventMarkFannedOut marks events fanned out (Pebble).
func (s *Store) EventMarkFannedOut(ctx context.Context, ids []string, at time.Time) error {
	return s.data.EventMarkFannedOut(ctx, ids, at)
}

// EventDeleteBefore deletes old events (Pebble).
func (s *Store) EventDeleteBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.data.EventDeleteBefore(ctx, before, limit)
}

// EventListReceived returns events in receipt order (Pebble).
func (s *Store) EventListReceived(ctx context.Context, p *event.ListReceivedParams) ([]*event.Event, error) {
	return s.data.EventListReceived(ctx, p)
}

// JobInsertMany stores jobs with their status events (Pebble).
func (s *Store) JobInsertMany(ctx context.Context, p *dispatch.JobInsertManyParams) error {
	return s.data.JobInsertMany(ctx, p)
}

// JobGetByID returns one job (Pebble).
func (s *Store) JobGetByID(ctx context.Context, id string) (*dispatch.Job, error) {
	return s.data.JobGetByID(ctx, id)
}

// JobGetMany returns the stored jobs among ids (Pebble).
func (s *Store) JobGetMany(ctx context.Context, ids []string) ([]*dispatch.Job, error) {
	return s.data.JobGetMany(ctx, ids)
}

// JobListByEvent returns the jobs of one event (Pebble).
func (s *Store) JobListByEvent(ctx context.Context, eventID string) ([]*dispatch.Job, error) {
	return s.data.JobListByEvent(ctx, eventID)
}

// JobList returns one page of jobs (Pebble).
func (s *Store) JobList(ctx context.Context, p *dispatch.JobListParams) (*dispatch.JobPage, error) {
	return s.data.JobList(ctx, p)
}

// JobUpdate writes a job, version-checked, with its status events (Pebble).
func (s *Store) JobUpdate(ctx context.Context, p *dispatch.JobUpdateParams) error {
	return s.data.JobUpdate(ctx, p)
}

// OutboxList returns up to limit operational outbox events of both planes,
// oldest id first: the circuit and subscription events SQLite stored with
// their control-plane write, and the discarded jobs' events Pebble stored
// with the job's update.
func (s *Store) OutboxList(ctx context.Context, limit int) ([]stream.Event, error) {
	if limit <= 0 {
		limit = 100
	}
	events, err := s.Store.OutboxList(ctx, limit)
	if err != nil {
		return nil, err
	}
	data, err := s.data.OutboxList(ctx, limit)
	if err != nil {
		return nil, err
	}
	events = append(events, data...)
	slices.SortFunc(events, func(a, b stream.Event) int { return strings.Compare(a.ID, b.ID) })
	if len(events) > limit {
		events = events[:limit]
	}
	return events, nil
}

// OutboxDelete removes the operational outbox events with the given ids
// from both planes.
func (s *Store) OutboxDelete(ctx context.Context, ids []string) error {
	return errors.Join(s.Store.OutboxDelete(ctx, ids), s.data.OutboxDelete(ctx, ids))
}

// JobListDue returns the due jobs of one status (Pebble).
func (s *Store) JobListDue(ctx context.Context, p *dispatch.JobListDueParams) ([]*dispatch.Job, error) {
	return s.data.JobListDue(ctx, p)
}

// JobListGroup returns jobs of one message group (Pebble).
func (s *Store) JobListGroup(ctx context.Context, p *dispatch.JobListGroupParams) ([]*dispatch.Job, error) {
	return s.data.JobListGroup(ctx, p)
}

// JobDeleteFinishedBefore deletes old finished jobs (Pebble).
func (s *Store) JobDeleteFinishedBefore(ctx context.Context, p *dispatch.JobDeleteFinishedBeforeParams) (int, error) {
	return s.data.JobDeleteFinishedBefore(ctx, p)
}

// JobCountUnfinished counts a subscription's unfinished jobs (Pebble).
func (s *Store) JobCountUnfinished(ctx context.Context, p *replay.JobCountUnfinishedParams) (int, error) {
	return s.data.JobCountUnfinished(ctx, p)
}

// StatusEventInsertMany stores status events (Pebble).
func (s *Store) StatusEventInsertMany(ctx context.Context, events []stream.Event) error {
	return s.data.StatusEventInsertMany(ctx, events)
}

// StatusEventListAfter returns status events after an id (Pebble).
func (s *Store) StatusEventListAfter(ctx context.Context, p *stream.ListAfterParams) ([]stream.Event, error) {
	return s.data.StatusEventListAfter(ctx, p)
}

// StatusEventListBySubject returns the status events of a subject (Pebble).
func (s *Store) StatusEventListBySubject(ctx context.Context, subject string) ([]stream.Event, error) {
	return s.data.StatusEventListBySubject(ctx, subject)
}

// StatusEventDeleteBefore deletes old status events (Pebble).
func (s *Store) StatusEventDeleteBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.data.StatusEventDeleteBefore(ctx, before, limit)
}
