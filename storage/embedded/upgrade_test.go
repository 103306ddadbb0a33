package embedded_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/storage/embedded"
	"github.com/hooklane/hooklane/storage/pebblestore"
	"github.com/hooklane/hooklane/storage/secretbox"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func baseTime() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 123_000_000, time.UTC) }

// oldData is what a gateway of the release before the data plane moved
// left in its directory: everything in hooklane.db.
type oldData struct {
	sub          *subscription.Subscription
	events       []*event.Event
	jobs         []*dispatch.Job // as stored, Version set
	statusEvents []stream.Event
	box          *secretbox.Box
}

// writeOldData writes oldData through sqlitestore, as today's release
// does, and closes the store.
func writeOldData(t *testing.T, dir string) *oldData {
	t.Helper()
	ctx := t.Context()
	box, err := secretbox.New(bytes.Repeat([]byte{7}, secretbox.KeySize))
	require.NoError(t, err)
	sq, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: filepath.Join(dir, embedded.SQLiteFile), Box: box})
	require.NoError(t, err)
	ids := idgen.New(baseTime)
	d := &oldData{box: box}
	d.sub = &subscription.Subscription{
		ID: ids.New(), Code: "orders", Name: "orders", Target: "http://127.0.0.1:9/hook",
		Mode: dispatch.ModeNextOnError, Delivery: dispatch.DeliveryPush, Status: subscription.StatusActive,
		Secrets:   []subscription.Secret{{Value: "whsec_c2VjcmV0LW9mLXN1Yg=="}},
		CreatedAt: baseTime(), UpdatedAt: baseTime(),
	}
	require.NoError(t, sq.SubscriptionInsert(ctx, d.sub))
	for i := range 3 {
		id := ids.New()
		ev := &event.Event{
			ID: id, ReceivedAt: baseTime().Add(time.Duration(i) * time.Second), DedupKey: "/orders\x00" + id,
			Event: cloudevent.Event{
				SpecVersion: cloudevent.SpecVersion, ID: "ce-" + id, Source: "/orders", Type: "order.created",
				Time: baseTime(), DataContentType: "application/json", Data: json.RawMessage(`{"n":1}`),
				Extensions: map[string]any{"messagegroup": "g"},
			},
		}
		job := &dispatch.Job{
			ID: ids.New(), Kind: dispatch.KindEvent, Code: "order.created", EventID: id, SubscriptionID: d.sub.ID,
			Subscription: "orders", TargetURL: d.sub.Target, Mode: dispatch.ModeNextOnError, Delivery: dispatch.DeliveryPush,
			MessageGroup: "g", Payload: []byte(`{"n":1}`), Status: dispatch.StatusQueued, MaxAttempts: 3,
			Attempts: []dispatch.Attempt{}, CreatedAt: baseTime(), UpdatedAt: baseTime(),
		}
		se := []stream.Event{
			{ID: ids.New(), Type: stream.TypeEventAccepted, Time: baseTime(), Subject: id, Data: stream.Data{EventID: id}},
			{ID: ids.New(), Type: stream.TypeDispatchCreated, Time: baseTime(), Subject: job.ID, Data: stream.Data{JobID: job.ID}},
		}
		_, err := sq.EventIngest(ctx, &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{{Event: ev, Jobs: []*dispatch.Job{job}, StatusEvents: se}}})
		require.NoError(t, err)
		d.events = append(d.events, ev)
		d.jobs = append(d.jobs, job)
		d.statusEvents = append(d.statusEvents, se...)
	}
	// A job moved on (version 2), and a TASK job with a sealed secret.
	done := d.jobs[0]
	done.Status, done.AttemptCount, done.UpdatedAt = dispatch.StatusCompleted, 1, baseTime().Add(time.Minute)
	require.NoError(t, sq.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: done}))
	task := &dispatch.Job{
		ID: ids.New(), Kind: dispatch.KindTask, Code: "task", TargetURL: "http://127.0.0.1:9/task",
		Mode: dispatch.ModeImmediate, Delivery: dispatch.DeliveryPush, Secret: "whsec_dGFzaw==", Status: dispatch.StatusPending,
		MaxAttempts: 1, Attempts: []dispatch.Attempt{}, CreatedAt: baseTime(), UpdatedAt: baseTime(),
	}
	require.NoError(t, sq.JobInsertMany(ctx, &dispatch.JobInsertManyParams{Jobs: []*dispatch.Job{task}}))
	d.jobs = append(d.jobs, task)
	require.NoError(t, sq.Close())
	return d
}

// requireKept checks that s reads back every record of d through the
// ports.
func requireKept(t *testing.T, s *embedded.Store, d *oldData) {
	t.Helper()
	ctx := t.Context()
	sub, err := s.SubscriptionGetByID(ctx, d.sub.ID)
	require.NoError(t, err)
	require.Equal(t, d.sub.Secrets, sub.Secrets)
	for _, want := range d.events {
		got, err := s.EventGetByID(ctx, want.ID)
		require.NoError(t, err)
		require.Equal(t, want.DedupKey, got.DedupKey)
		require.Equal(t, want.ReceivedAt, got.ReceivedAt)
		require.NotNil(t, got.FannedOutAt, "the fan-out marker is kept")
		require.JSONEq(t, string(want.Event.Data), string(got.Event.Data))
	}
	page, err := s.EventList(ctx, &event.ListParams{Limit: 10})
	require.NoError(t, err)
	require.Len(t, page.Events, len(d.events))
	for _, want := range d.jobs {
		got, err := s.JobGetByID(ctx, want.ID)
		require.NoError(t, err)
		require.Equal(t, want, got, "the job, its version and its secret")
	}
	byEvent, err := s.JobListByEvent(ctx, d.events[1].ID)
	require.NoError(t, err)
	require.Equal(t, []*dispatch.Job{d.jobs[1]}, byEvent)
	due, err := s.JobListDue(ctx, &dispatch.JobListDueParams{Status: dispatch.StatusQueued, Now: baseTime().Add(time.Hour), Limit: 10})
	require.NoError(t, err)
	require.ElementsMatch(t, []*dispatch.Job{d.jobs[1], d.jobs[2]}, due, "the pollers' index is built")
	for _, e := range d.statusEvents {
		got, err := s.StatusEventListBySubject(ctx, e.Subject)
		require.NoError(t, err)
		require.Contains(t, got, e)
	}
	feed, err := s.StatusEventListAfter(ctx, &stream.ListAfterParams{Limit: 100})
	require.NoError(t, err)
	require.Len(t, feed, len(d.statusEvents), "each status event once")
	dup, err := s.EventIngest(ctx, &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{{Event: d.events[2]}}})
	require.NoError(t, err)
	require.Equal(t, []dispatch.EventIngestResult{{Duplicate: true, ExistingID: d.events[2].ID}}, dup, "the dedup index is built")
	// The SQLite file no longer holds the data plane.
	left, err := s.JobListSealedAfter(ctx, "", 10)
	require.NoError(t, err)
	require.Empty(t, left)
	old, err := s.Store.EventListReceived(ctx, &event.ListReceivedParams{Until: baseTime().Add(time.Hour)})
	require.NoError(t, err)
	require.Empty(t, old)
}

func TestUpgradeKeepsTheDataOfAnSQLiteOnlyDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := writeOldData(t, dir)

	s, err := embedded.Open(t.Context(), embedded.Config{Dir: dir, Box: d.box})
	require.NoError(t, err)
	requireKept(t, s, d)
	census, err := s.SecretSealAll(t.Context())
	require.NoError(t, err)
	require.Equal(t, secretbox.Census{Sealed: 2}, census, "the secrets stay sealed: the subscription's and the TASK job's")
	require.NoError(t, s.Close())

	// Opened again: nothing is copied twice.
	s, err = embedded.Open(t.Context(), embedded.Config{Dir: dir, Box: d.box})
	require.NoError(t, err)
	requireKept(t, s, d)
	require.NoError(t, s.Close())
}

func TestUpgradeRestartsAfterACrashDuringTheCopy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := writeOldData(t, dir)

	// A copy that stopped after the first event and the first job: no
	// marker.
	sq, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: filepath.Join(dir, embedded.SQLiteFile)})
	require.NoError(t, err)
	events, err := sq.EventListReceived(t.Context(), &event.ListReceivedParams{Until: baseTime().Add(time.Hour), Limit: 1})
	require.NoError(t, err)
	jobs, err := sq.JobListSealedAfter(t.Context(), "", 1)
	require.NoError(t, err)
	require.NoError(t, sq.Close())
	pb, err := pebblestore.Open(t.Context(), pebblestore.Config{Dir: filepath.Join(dir, embedded.PebbleDir)})
	require.NoError(t, err)
	require.NoError(t, pb.ImportEvents(t.Context(), events))
	require.NoError(t, pb.ImportJobs(t.Context(), jobs))
	require.NoError(t, pb.Close())

	s, err := embedded.Open(t.Context(), embedded.Config{Dir: dir, Box: d.box})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	requireKept(t, s, d)
}

func TestOpenMovesTheStatusEventsLeftInTheOutbox(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := embedded.Open(t.Context(), embedded.Config{Dir: dir})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	// A crash after a circuit change committed its status event to
	// SQLite, before the event was moved.
	sq, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: filepath.Join(dir, embedded.SQLiteFile)})
	require.NoError(t, err)
	left := stream.Event{ID: idgen.New(baseTime).New(), Type: stream.TypeSubscriptionCircuitOpened, Time: baseTime(), Subject: "sub-1", Data: stream.Data{Subscription: "orders"}}
	require.NoError(t, sq.StatusEventInsertMany(t.Context(), []stream.Event{left}))
	require.NoError(t, sq.Close())

	s, err = embedded.Open(t.Context(), embedded.Config{Dir: dir})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	got, err := s.StatusEventListBySubject(t.Context(), "sub-1")
	require.NoError(t, err)
	require.Equal(t, []stream.Event{left}, got)
	outbox, err := s.Store.StatusEventListAfter(t.Context(), &stream.ListAfterParams{Limit: 10})
	require.NoError(t, err)
	require.Empty(t, outbox, "moved, not copied")
}

// TestUpgradeReadsJobsOfFormat1: testdata/format1 is a data directory
// written by the release before the binary job values (3facead: the data
// of writeOldData copied from SQLite into Pebble at open, every job a JSON
// document — format 1), and testdata/format1-jobs.json the jobs it stored.
// This version reads each job as it was stored (secret and version
// included); a job it updates is stored in the binary form (format 2) and
// reads back after a restart; the jobs it did not write stay in format 1.
func TestUpgradeReadsJobsOfFormat1(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "format1"))))
	raw, err := os.ReadFile(filepath.Join("testdata", "format1-jobs.json"))
	require.NoError(t, err)
	type plainJob dispatch.Job
	var stored []struct {
		Job     *plainJob `json:"job"`
		Secret  string    `json:"secret"`
		Version int64     `json:"version"`
	}
	require.NoError(t, json.Unmarshal(raw, &stored))
	require.Len(t, stored, 4)
	jobs := make([]*dispatch.Job, len(stored))
	for i, s := range stored {
		jobs[i] = (*dispatch.Job)(s.Job)
		jobs[i].Secret, jobs[i].Version = s.Secret, s.Version
	}
	box, err := secretbox.New(bytes.Repeat([]byte{7}, secretbox.KeySize))
	require.NoError(t, err)

	s, err := embedded.Open(ctx, embedded.Config{Dir: dir, Box: box})
	require.NoError(t, err)
	for _, want := range jobs {
		got, err := s.JobGetByID(ctx, want.ID)
		require.NoError(t, err)
		require.Equal(t, want, got, "a format-1 job reads as stored")
		format, err := s.Data().JobFormat(ctx, want.ID)
		require.NoError(t, err)
		require.Equal(t, 1, format)
	}
	// A claim of the QUEUED event job and a failed attempt of the TASK job
	// (its secret sealed in the record).
	at := baseTime().Add(time.Hour)
	queued, task := jobs[1], jobs[3]
	require.Equal(t, dispatch.StatusQueued, queued.Status)
	require.NotEmpty(t, task.Secret)
	lease := at.Add(time.Minute)
	queued.Status, queued.Worker, queued.LeaseExpiresAt, queued.UpdatedAt = dispatch.StatusInProgress, "w-1", &lease, at
	lastErr := "HTTP 503"
	task.AttemptCount, task.LastError, task.NextAttemptAt, task.UpdatedAt = 1, &lastErr, &lease, at
	task.Attempts = append(task.Attempts, dispatch.Attempt{Attempt: 1, StartedAt: at, DurationMs: 12, StatusCode: 503, Error: lastErr})
	for _, j := range []*dispatch.Job{queued, task} {
		ev := j.StatusEvent(idgen.New(nil).New(), stream.TypeDispatchStarted, at)
		require.NoError(t, s.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: j, Events: []stream.Event{ev}}))
		format, err := s.Data().JobFormat(ctx, j.ID)
		require.NoError(t, err)
		require.Equal(t, 2, format, "an updated job is stored in the binary form")
	}
	require.NoError(t, s.Close())

	s, err = embedded.Open(ctx, embedded.Config{Dir: dir, Box: box})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	for i, want := range jobs {
		got, err := s.JobGetByID(ctx, want.ID)
		require.NoError(t, err)
		require.Equal(t, want, got, "after a restart")
		format, err := s.Data().JobFormat(ctx, want.ID)
		require.NoError(t, err)
		require.Equal(t, map[bool]int{true: 2, false: 1}[i == 1 || i == 3], format)
	}
	due, err := s.JobListDue(ctx, &dispatch.JobListDueParams{Status: dispatch.StatusInProgress, Now: lease, Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []*dispatch.Job{queued}, due, "the indexes follow the update")
	// The status events: six stored with their data as JSON objects, two
	// with it in the binary form.
	feed, err := s.StatusEventListAfter(ctx, &stream.ListAfterParams{Limit: 100})
	require.NoError(t, err)
	require.Len(t, feed, 8)
	for _, e := range feed[:6] {
		require.NotEmpty(t, e.Data.EventID+e.Data.JobID, "an earlier status event's data is read")
	}
	started, err := s.StatusEventListBySubject(ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, stream.TypeDispatchStarted, started[len(started)-1].Type)
	require.Equal(t, task.ID, started[len(started)-1].Data.JobID)
	require.Equal(t, 1, started[len(started)-1].Data.Attempt)
}
