package embedded

import (
	"context"
	"fmt"
	"time"

	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/stream"
)

// upgradedMarker is the data plane's marker of a complete copy.
const upgradedMarker = "upgraded"

// upgradePage is how many rows one step of the copy moves.
const upgradePage = 500

// upgrade moves what SQLite holds of the data plane into Pebble; see the
// package doc.
func (s *Store) upgrade(ctx context.Context) error {
	done, err := s.data.MarkerGet(ctx, upgradedMarker)
	if err != nil {
		return fmt.Errorf("upgrade: %w", err)
	}
	copied := 0
	if !done {
		n, err := s.copyEvents(ctx)
		if err != nil {
			return fmt.Errorf("upgrade: %w", err)
		}
		m, err := s.copyJobs(ctx)
		if err != nil {
			return fmt.Errorf("upgrade: %w", err)
		}
		copied = n + m
	}
	n, err := s.copyStatusEvents(ctx)
	if err != nil {
		return fmt.Errorf("upgrade: %w", err)
	}
	copied += n
	if !done {
		if err := s.data.MarkerSet(ctx, upgradedMarker); err != nil {
			return fmt.Errorf("upgrade: %w", err)
		}
	}
	if copied > 0 || !done {
		if err := s.DataPlaneClear(ctx); err != nil {
			return fmt.Errorf("upgrade: %w", err)
		}
	}
	if copied > 0 {
		s.logger.InfoContext(ctx, "moved the data plane from sqlite to pebble", "records", copied)
	}
	return nil
}

// untilForever bounds a walk of every event by time.
func untilForever() time.Time { return time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC) }

func (s *Store) copyEvents(ctx context.Context) (int, error) {
	n := 0
	p := &event.ListReceivedParams{Until: untilForever(), Limit: upgradePage}
	for {
		page, err := s.Store.EventListReceived(ctx, p)
		if err != nil {
			return n, fmt.Errorf("read events: %w", err)
		}
		if len(page) == 0 {
			return n, nil
		}
		if err := s.data.ImportEvents(ctx, page); err != nil {
			return n, err
		}
		n += len(page)
		last := page[len(page)-1]
		p.AfterReceivedAt, p.AfterID = last.ReceivedAt, last.ID
	}
}

func (s *Store) copyJobs(ctx context.Context) (int, error) {
	n := 0
	after := ""
	for {
		page, err := s.JobListSealedAfter(ctx, after, upgradePage)
		if err != nil {
			return n, fmt.Errorf("read jobs: %w", err)
		}
		if len(page) == 0 {
			return n, nil
		}
		if err := s.data.ImportJobs(ctx, page); err != nil {
			return n, err
		}
		n += len(page)
		after = page[len(page)-1].ID
	}
}

func (s *Store) copyStatusEvents(ctx context.Context) (int, error) {
	n := 0
	p := &stream.ListAfterParams{Limit: upgradePage}
	for {
		page, err := s.Store.StatusEventListAfter(ctx, p)
		if err != nil {
			return n, fmt.Errorf("read status events: %w", err)
		}
		if len(page) == 0 {
			return n, nil
		}
		if err := s.data.StatusEventInsertMany(ctx, page); err != nil {
			return n, err
		}
		n += len(page)
		p.AfterID = page[len(page)-1].ID
	}
}
