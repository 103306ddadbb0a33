package mongostore

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/hooklane/hooklane/event"
)

// EventClearFannedOut puts events back in the state a crash between the
// event write and the fan-out leaves (storetest.FanOutClearer).
func (s *Store) EventClearFannedOut(ctx context.Context, ids []string) error {
	if err := s.check(); err != nil {
		return err
	}
	if err := s.writeFanOutMarks(ctx); err != nil {
		return err
	}
	s.fanOutMarks.forget(ids)
	_, err := s.events.UpdateMany(ctx,
		bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "fannedOutAt", Value: nil}}}})
	if err != nil {
		return fmt.Errorf("clear fannedOutAt: %w", translate(ctx, err))
	}
	return nil
}

// WriteGuards reports whether JobUpdate and EventTypeUpdate take write
// guards (see replaceVersioned).
func (s *Store) WriteGuards() bool { return s.writeGuards }

// SetWriteGuards turns write guards on or off, so tests reach both paths
// whatever the server.
func (s *Store) SetWriteGuards(on bool) { s.writeGuards = on }

// PlantGuard stores the write guard a writer moving document id of
// collection coll to version takes, dated createdAt: what a writer that died
// between taking and releasing it leaves.
func (s *Store) PlantGuard(ctx context.Context, coll, id string, version int64, createdAt time.Time) error {
	_, err := s.guards.InsertOne(ctx, guardDoc{ID: fmt.Sprintf("%s/%s@%d", coll, id, version), CreatedAt: ms(createdAt)})
	if err != nil {
		return fmt.Errorf("plant guard: %w", translate(ctx, err))
	}
	return nil
}

// SetHoldStatusEvents turns on or off the job writes' holding of their
// status events in the job's document (on MongoDB by default, see
// Store.holdStatus), so tests reach both paths whatever the server.
func (s *Store) SetHoldStatusEvents(on bool) { s.holdStatus = on }

// PauseJobCommits makes JobUpdate calls queue their writes as if a shared
// bulkWrite were running (see jobCommitter), until ResumeJobCommits.
func (s *Store) PauseJobCommits() {
	c := s.jobCommits
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running = true
}

// QueuedJobWrites returns how many job writes wait for a bulkWrite.
func (s *Store) QueuedJobWrites() int {
	c := s.jobCommits
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// ResumeJobCommits sends the queued job writes, as the end of a running
// bulkWrite would.
func (s *Store) ResumeJobCommits(ctx context.Context) {
	go s.jobCommits.lead(ctx)
}

// ListWithMarkWrittenMidRead lists event id as EventList does, with the
// status relay's marking round run between the find and the look-up of
// the waiting marks: the interleaving that hides a mark from both.
func (s *Store) ListWithMarkWrittenMidRead(ctx context.Context, id string) (*event.Event, error) {
	written := s.fanOutMarks.writtenCount()
	var doc eventDoc
	if err := s.events.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&doc); err != nil {
		return nil, fmt.Errorf("read event %s: %w", id, err)
	}
	e, err := doc.asDomain()
	if err != nil {
		return nil, err
	}
	if err := s.writeFanOutMarks(ctx); err != nil {
		return nil, err
	}
	if err := s.withWaitingMarks(ctx, []*event.Event{e}, written); err != nil {
		return nil, err
	}
	return e, nil
}
