package dispatch

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/queue"
	"github.com/hooklane/hooklane/store/binform"
)

// A job's queue message carries, besides the job's id, a snapshot of what
// its delivery needs: the job as stored when it was sent (with its
// version) and, when the sender had it at hand and it is small, its event.
// A router then delivers without reading the job or the event: the claim
// is a version-checked write against the stored job, so a snapshot that is
// no longer current costs one conflict and a read, never a wrong delivery;
// and an event never changes once stored.
//
// Only EVENT jobs without credentials of their own are snapshotted: a TASK
// job's secret and endpoint credentials never travel through the queue
// (its message is the id alone, as are the messages of earlier versions,
// which are still read).
//
// A snapshot is written in the binary form: binaryMessagePrefix, then in
// standard base64 (an SQS body must be text) the job's binary form
// (AppendJobBinary, its version included) and, when it rides along, the
// event's own fields and its CloudEvent's bytes as stored. Earlier
// versions wrote a JSON object (messageBody), which ReadMessage still
// reads, as it reads the bare id. An earlier version's router cannot read
// a binary message: it drops it as unreadable, and its job, left QUEUED,
// is moved back to PENDING by the stale-queued rescuer and sent again — a
// delay during a rolling upgrade, not a loss.

// Bounds of a message: an SQS batch of queue.MaxBatch messages stays under
// its 256 KiB, whatever the sizes.
const (
	// snapshotEventMaxBytes is the largest event data sent with its job.
	snapshotEventMaxBytes = 16 << 10
	// snapshotMaxBytes is the largest message body with a snapshot; past
	// it the event is left out, then the job.
	snapshotMaxBytes = 24 << 10
)

// binaryMessagePrefix starts a message in the binary form. No earlier
// version writes it (their bodies are a JSON object or a job id, which
// never holds a space), and an earlier version's ReadMessage refuses a
// body with a space instead of taking it for an id.
const binaryMessagePrefix = "~1 "

// binaryMessageMaxBytes bounds the body ReadMessage decodes in the binary
// form (SQS's largest message).
const binaryMessageMaxBytes = 256 << 10

// snapshotJob is a job's stored fields with its version, without the API's
// rendering (Job.MarshalJSON).
type snapshotJob struct {
	*plainJob
	Version int64 `json:"version"`
}

// plainJob is Job without its methods.
type plainJob Job

// snapshotEvent is a stored event's own fields as a message carries
// them; the CloudEvent itself travels beside it, byte for byte (see
// messageBody).
type snapshotEvent struct {
	ID            string    `json:"id"`
	ReceivedAt    time.Time `json:"receivedAt"`
	DedupKey      string    `json:"dedupKey,omitempty"`
	SchemaVersion string    `json:"schemaVersion,omitempty"`
}

// messageBody is the JSON body of a message with a snapshot. CE is the
// event's CloudEvent as stored (its MarshalJSON): it is appended to the
// body as it is, never re-encoded, because encoding/json compacts and
// HTML-escapes what a Marshaler returns, and the delivered body must be
// the stored bytes.
type messageBody struct {
	ID    string          `json:"id"`
	Job   *snapshotJob    `json:"job,omitempty"`
	Event *snapshotEvent  `json:"event,omitempty"`
	CE    json.RawMessage `json:"ce,omitempty"`
}

// snapshottable reports whether j may travel in its message: an EVENT job
// pushed by the gateway, with no credentials of its own.
func snapshottable(j *Job) bool {
	return j.Kind == KindEvent && j.Delivery != DeliveryPull && j.Secret == "" && j.Auth == nil && j.TLS == nil
}

// Message returns the queue message for a QUEUED job, ev being its event
// when the caller has it (nil otherwise). The dedup id includes the job's
// version, so a legitimate re-queue (a retry, a reset by a poller) is never
// swallowed by the queue's deduplication, while a resend of the same
// queuing is. A job with a TraceParent carries it as the message attribute
// AttributeTraceParent, so the trace travels with the job through the
// queue; without one the message has no attributes.
func Message(j *Job, ev *event.Event) queue.OutMessage {
	return outMessage(j, messageBodyOf(j, ev))
}

// MessageJSON is Message with the snapshot in the JSON form of the releases
// before the binary form (2026-11-28), which they read: the form to write
// while instances of such a release share the queue (a rolling upgrade).
func MessageJSON(j *Job, ev *event.Event) queue.OutMessage {
	return outMessage(j, messageBodyJSON(j, ev))
}

func outMessage(j *Job, body []byte) queue.OutMessage {
	m := queue.OutMessage{
		Group:   j.QueueGroup(),
		DedupID: j.ID + "-" + strconv.FormatInt(j.Version, 10),
		Body:    body,
	}
	if j.TraceParent != "" {
		m.Attributes = map[string]string{AttributeTraceParent: j.TraceParent}
	}
	return m
}

// messageBodyJSON encodes j's message body in the JSON form: a snapshot
// when j may carry one and it fits, else the id alone.
func messageBodyJSON(j *Job, ev *event.Event) []byte {
	if !snapshottable(j) {
		return []byte(j.ID)
	}
	b, err := json.Marshal(messageBody{ID: j.ID, Job: &snapshotJob{plainJob: (*plainJob)(j), Version: j.Version}})
	if err != nil || len(b) > snapshotMaxBytes {
		return []byte(j.ID)
	}
	if ev == nil || ev.ID != j.EventID || len(ev.Event.Data)+len(ev.Event.DataBase64) > snapshotEventMaxBytes {
		return b
	}
	meta, err := json.Marshal(snapshotEvent{ID: ev.ID, ReceivedAt: ev.ReceivedAt, DedupKey: ev.DedupKey, SchemaVersion: ev.SchemaVersion})
	if err != nil {
		return b
	}
	ce, err := ev.Event.MarshalJSON()
	if err != nil || len(b)+len(meta)+len(ce)+16 > snapshotMaxBytes {
		return b // too big with the event: the job alone
	}
	// b ends with the job's closing brace and the envelope's: add the
	// event's fields before the last.
	out := make([]byte, 0, len(b)+len(meta)+len(ce)+16)
	out = append(out, b[:len(b)-1]...)
	out = append(out, `,"event":`...)
	out = append(out, meta...)
	out = append(out, `,"ce":`...)
	out = append(out, ce...)
	return append(out, '}')
}

// messageBodyOf encodes j's message body: a snapshot in the binary form
// when j may carry one and it fits, with its event when ev is its event
// and small, else the id alone.
func messageBodyOf(j *Job, ev *event.Event) []byte {
	if !snapshottable(j) {
		return []byte(j.ID)
	}
	w := jobWriter{binform.Writer{B: AppendJobBinary(make([]byte, 0, 1024), j)}}
	jobLen := len(w.B)
	if ev != nil && ev.ID == j.EventID && len(ev.Event.Data)+len(ev.Event.DataBase64) <= snapshotEventMaxBytes {
		if ce, err := ev.Event.MarshalJSON(); err == nil {
			w.bool(true)
			w.str(ev.ID)
			w.time(ev.ReceivedAt)
			w.str(ev.DedupKey)
			w.str(ev.SchemaVersion)
			w.Bytes(ce)
			if body := binaryMessage(w.B); len(body) <= snapshotMaxBytes {
				return body
			}
		}
	}
	// The job alone: too big with the event, or without one.
	w.B = w.B[:jobLen]
	w.bool(false)
	if body := binaryMessage(w.B); len(body) <= snapshotMaxBytes {
		return body
	}
	return []byte(j.ID)
}

// binaryMessage is the body of a message in the binary form holding b.
func binaryMessage(b []byte) []byte {
	out := make([]byte, len(binaryMessagePrefix), len(binaryMessagePrefix)+base64.StdEncoding.EncodedLen(len(b)))
	copy(out, binaryMessagePrefix)
	return base64.StdEncoding.AppendEncode(out, b)
}

// readBinaryMessage decodes a body in the binary form.
func readBinaryMessage(body []byte) (MessageContent, error) {
	if len(body) > binaryMessageMaxBytes {
		return MessageContent{}, fmt.Errorf("%w: %d bytes", ErrBadMessage, len(body))
	}
	b, err := base64.StdEncoding.AppendDecode(nil, body[len(binaryMessagePrefix):])
	if err != nil {
		return MessageContent{}, fmt.Errorf("%w: %w", ErrBadMessage, err)
	}
	r := jobReader{binform.NewReader(string(b))}
	j := r.job()
	if err := r.Err(); err != nil {
		return MessageContent{}, fmt.Errorf("%w: %w", ErrBadMessage, err)
	}
	if j.ID == "" {
		return MessageContent{}, ErrBadMessage
	}
	out := MessageContent{JobID: j.ID, Job: j}
	if r.bool() {
		ev := &event.Event{ID: r.str(), ReceivedAt: r.time(), DedupKey: r.str(), SchemaVersion: r.str()}
		ce := r.str()
		if r.Err() == nil && r.Len() == 0 && ev.ID == j.EventID && ev.ID != "" {
			if err := ev.Event.UnmarshalJSON([]byte(ce)); err != nil {
				return MessageContent{}, fmt.Errorf("%w: event: %w", ErrBadMessage, err)
			}
			out.Event = ev
		}
	}
	if r.Err() != nil || r.Len() > 0 {
		return MessageContent{}, fmt.Errorf("%w: bad snapshot", ErrBadMessage)
	}
	return out, nil
}

// MessageContent is what a job's message says: the job's id, and the
// snapshot it carries (nil when it has none).
type MessageContent struct {
	JobID string
	// Job is the job as stored when the message was sent, Version
	// included; nil when the message carries the id alone.
	Job *Job
	// Event is the job's event; nil when the message does not carry it.
	Event *event.Event
}

// ErrBadMessage is returned by ReadMessage for a body no version of the
// gateway writes.
var ErrBadMessage = errors.New("queue message body is not a job message")

// ReadMessage decodes a job's message body, as written by Message now (the
// binary form, or the id alone) or by earlier versions (a JSON object, the
// id alone).
func ReadMessage(body []byte) (MessageContent, error) {
	if len(body) > 0 && body[0] == binaryMessagePrefix[0] {
		// No id starts so (ids are ULIDs): a binary body, or a damaged one.
		if !bytes.HasPrefix(body, []byte(binaryMessagePrefix)) {
			return MessageContent{}, ErrBadMessage
		}
		return readBinaryMessage(body)
	}
	if len(body) == 0 || body[0] != '{' {
		if len(body) == 0 || len(body) > 256 || bytes.ContainsAny(body, " \"\n") {
			return MessageContent{}, ErrBadMessage
		}
		return MessageContent{JobID: string(body)}, nil
	}
	// encoding/json cannot allocate an embedded pointer to an unexported
	// type: the job is allocated here.
	m := messageBody{Job: &snapshotJob{plainJob: &plainJob{}}}
	if err := json.Unmarshal(body, &m); err != nil {
		return MessageContent{}, fmt.Errorf("%w: %w", ErrBadMessage, err)
	}
	if m.ID == "" || m.Job == nil || m.Job.plainJob == nil || m.Job.ID != m.ID {
		return MessageContent{}, ErrBadMessage
	}
	j := (*Job)(m.Job.plainJob)
	j.Version = m.Job.Version
	out := MessageContent{JobID: m.ID, Job: j}
	if e := m.Event; e != nil && e.ID == j.EventID && len(m.CE) > 0 {
		ev := &event.Event{ID: e.ID, ReceivedAt: e.ReceivedAt, DedupKey: e.DedupKey, SchemaVersion: e.SchemaVersion}
		if err := ev.Event.UnmarshalJSON(m.CE); err != nil {
			return MessageContent{}, fmt.Errorf("%w: event: %w", ErrBadMessage, err)
		}
		out.Event = ev
	}
	return out, nil
}
