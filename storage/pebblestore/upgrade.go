package pebblestore

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
)

// MarkerGet reports whether the marker name is set (storage/embedded's
// "the upgrade's copy is complete").
func (s *Store) MarkerGet(_ context.Context, name string) (bool, error) {
	set := false
	err := s.read(func(db *pebble.DB) error {
		v, err := get(db, key(pfxMeta, name))
		set = v != nil
		return err
	})
	if err != nil {
		return false, fmt.Errorf("get marker %s: %w", name, err)
	}
	return set, nil
}

// MarkerSet sets the marker name, durably.
func (s *Store) MarkerSet(ctx context.Context, name string) error {
	err := s.write(ctx, func(tx *writeTx) error {
		return tx.set(key(pfxMeta, name), []byte{1})
	})
	if err != nil {
		return fmt.Errorf("set marker %s: %w", name, err)
	}
	return nil
}

// ImportEvents stores events as they are (their fan-out marker included),
// skipping the ids already stored: the in-place upgrade's copy, which may
// run again after a crash.
func (s *Store) ImportEvents(ctx context.Context, events []*event.Event) error {
	recs := make([]*eventRecord, len(events))
	for i, e := range events {
		r, err := newEventRecord(e)
		if err != nil {
			return fmt.Errorf("import events: %w", err)
		}
		recs[i] = r
	}
	err := s.write(ctx, func(tx *writeTx) error {
		var fresh []*eventRecord
		for _, r := range recs {
			ok, err := tx.has(key(pfxEvent, r.id))
			if err != nil {
				return err
			}
			if !ok {
				fresh = append(fresh, r)
			}
		}
		for _, r := range fresh {
			if err := putEvent(tx, r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("import events: %w", err)
	}
	return nil
}

// ImportJobs stores jobs as they are — their secrets as stored (sealed or
// not: they are not opened) and their versions — skipping the ids already
// stored.
func (s *Store) ImportJobs(ctx context.Context, jobs []*dispatch.Job) error {
	recs := make([]*jobRecord, len(jobs))
	for i, j := range jobs {
		r, err := encodeJob(j, j.Version)
		if err != nil {
			return fmt.Errorf("import jobs: %w", err)
		}
		recs[i] = r
	}
	err := s.write(ctx, func(tx *writeTx) error {
		_, err := insertJobs(tx, recs, nil, false)
		return err
	})
	if err != nil {
		return fmt.Errorf("import jobs: %w", err)
	}
	return nil
}
