package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hooklane/hooklane/event/cloudevent"
)

// Content types of the CloudEvents HTTP binding.
const (
	ContentTypeStructured = "application/cloudevents+json"
	ContentTypeBatch      = "application/cloudevents-batch+json"
	contentTypeJSON       = "application/json"
)

// Mode is the CloudEvents HTTP content mode of a request.
type Mode int

// Content modes.
const (
	ModeStructured Mode = iota + 1
	ModeBatch
	ModeBinary
)

// Limits bound what one ingest request may carry.
type Limits struct {
	// MaxEventBytes is the largest single event (its JSON, or its binary
	// body). Default 1 MiB.
	MaxEventBytes int64
	// MaxRequestBytes is the largest request body. Default 10 MiB.
	MaxRequestBytes int64
	// MaxBatch is the most events in one batch. Default 1000.
	MaxBatch int
}

// Limit defaults (API.md §9).
const (
	MaxEventBytesDefault   = 1 << 20
	MaxRequestBytesDefault = 10 << 20
	MaxBatchDefault        = 1000
)

func (l Limits) withDefaults() Limits {
	if l.MaxEventBytes <= 0 {
		l.MaxEventBytes = MaxEventBytesDefault
	}
	if l.MaxRequestBytes <= 0 {
		l.MaxRequestBytes = MaxRequestBytesDefault
	}
	if l.MaxBatch <= 0 {
		l.MaxBatch = MaxBatchDefault
	}
	return l
}

// Request is a parsed ingest request: one event, or a batch.
type Request struct {
	Mode   Mode
	Events []cloudevent.Event
}

// pointer returns the JSON pointer prefix of item i: "" for a single event,
// "/i" in a batch.
func (r *Request) pointer(i int) string {
	if r.Mode == ModeBatch {
		return "/" + strconv.Itoa(i)
	}
	return ""
}

// DetectMode returns the content mode of a request from its headers, per
// API.md §1; ok is false when the content type is unsupported (415).
func DetectMode(h http.Header) (Mode, bool) {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil {
		mt = ""
	}
	switch {
	case mt == ContentTypeStructured:
		return ModeStructured, true
	case mt == ContentTypeBatch:
		return ModeBatch, true
	case h.Get("ce-specversion") != "":
		return ModeBinary, true
	case mt == contentTypeJSON:
		return ModeStructured, true
	}
	return 0, false
}

// Parse reads and decodes an ingest request in any of the three content
// modes. It checks the JSON well-formedness, the size limits and each
// event's envelope (API.md §1 steps 1 and 2), then that each event can be
// stored and delivered as it came (cloudevent.Event.CheckDeliverable: the
// attribute limits, values that can be sent as HTTP headers, W3C trace
// context): a 422 pointing at the attribute. Every failure is an *Error: a
// body that cannot be read is the client's (400 when cut off or malformed,
// 408 when it does not arrive within the server's read timeout).
func Parse(r *http.Request, limits Limits) (*Request, error) {
	limits = limits.withDefaults()
	mode, ok := DetectMode(r.Header)
	if !ok {
		return nil, &Error{
			Status: http.StatusUnsupportedMediaType, Title: "Unsupported Media Type",
			Detail: fmt.Sprintf("content type %q is not a CloudEvents mode: use %s, %s, %s, or binary mode with ce-* headers",
				r.Header.Get("Content-Type"), ContentTypeStructured, ContentTypeBatch, contentTypeJSON),
		}
	}
	if r.ContentLength > limits.MaxRequestBytes {
		return nil, tooLarge(fmt.Sprintf("the request body exceeds %d bytes", limits.MaxRequestBytes))
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limits.MaxRequestBytes+1))
	if err != nil {
		return nil, readError(err)
	}
	if int64(len(body)) > limits.MaxRequestBytes {
		return nil, tooLarge(fmt.Sprintf("the request body exceeds %d bytes", limits.MaxRequestBytes))
	}
	req := &Request{Mode: mode}
	switch mode {
	case ModeStructured:
		if int64(len(body)) > limits.MaxEventBytes {
			return nil, tooLarge(fmt.Sprintf("the event exceeds %d bytes", limits.MaxEventBytes))
		}
		ev, perr := decodeStructured(body, "")
		if perr != nil {
			return nil, perr
		}
		req.Events = []cloudevent.Event{ev}
	case ModeBatch:
		events, perr := decodeBatch(body, limits)
		if perr != nil {
			return nil, perr
		}
		req.Events = events
	case ModeBinary:
		if int64(len(body)) > limits.MaxEventBytes {
			return nil, tooLarge(fmt.Sprintf("the event exceeds %d bytes", limits.MaxEventBytes))
		}
		ev, perr := decodeBinary(r.Header, body)
		if perr != nil {
			return nil, perr
		}
		req.Events = []cloudevent.Event{ev}
	}
	return req, nil
}

func decodeStructured(body []byte, prefix string) (cloudevent.Event, *Error) {
	var ev cloudevent.Event
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		if !json.Valid(trimmed) {
			return ev, badRequest("the body is not well-formed JSON", Violation{Pointer: prefix, Message: "malformed JSON"})
		}
		return ev, badRequest("a structured-mode event must be a JSON object", Violation{Pointer: prefix, Message: "must be a JSON object"})
	}
	if !json.Valid(trimmed) {
		return ev, badRequest("the body is not well-formed JSON", Violation{Pointer: prefix, Message: "malformed JSON: " + syntaxError(trimmed)})
	}
	// An event of thousands of members would cost a map entry and a decoded
	// value each before the count could be checked: count them first, on
	// the bytes, and refuse an event that cannot be within the limit (every
	// member but the ten specification ones is an extension).
	if countMembers(trimmed, maxMembers+1) > maxMembers {
		return ev, unprocessable("the event carries too many attributes",
			Violation{Pointer: prefix, Message: fmt.Sprintf("carries more than %d extension attributes; at most %d are allowed", cloudevent.MaxExtensions, cloudevent.MaxExtensions)})
	}
	if err := ev.UnmarshalJSON(trimmed); err != nil {
		return ev, envelopeError(err, prefix)
	}
	if ev.Data != nil && !utf8.Valid(ev.Data) {
		// JSON is UTF-8 (RFC 8259): invalid bytes in data would be
		// replaced by U+FFFD wherever it is decoded (schema validation,
		// filters) but delivered as they came.
		return ev, badRequest("the event is not a valid CloudEvent", Violation{Pointer: prefix + "/data", Message: "must be valid UTF-8"})
	}
	if err := validateEnvelope(&ev); err != nil {
		return ev, envelopeError(err, prefix)
	}
	if err := ev.CheckDeliverable(); err != nil {
		return ev, undeliverableError(err, prefix)
	}
	return ev, nil
}

// maxMembers is the most members an event object can have within the
// limits: the specification attributes and data members, and
// cloudevent.MaxExtensions extensions.
const maxMembers = cloudevent.MaxExtensions + 10

// countMembers returns the number of members of the JSON object obj (valid
// JSON), counting no further than stop. It reads the bytes once, skipping
// over strings with bytes.IndexByte, and allocates nothing; an object too
// short to hold stop members is not read at all.
func countMembers(obj []byte, stop int) int {
	// The shortest member is `"":0`, and members are separated by commas.
	if len(obj) < 2+5*stop-1 {
		return 0
	}
	depth, n := 0, 0
	for i := 0; i < len(obj); i++ {
		switch obj[i] {
		case '"':
			if depth == 1 && (n == 0 || obj[lastNonSpace(obj, i)] == ',') {
				n++
				if n >= stop {
					return n
				}
			}
			i = stringEnd(obj, i)
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		}
	}
	return n
}

// stringEnd returns the index of the quote that closes the JSON string
// opened at obj[start] (len(obj) when there is none).
func stringEnd(obj []byte, start int) int {
	for i := start + 1; ; {
		q := bytes.IndexByte(obj[i:], '"')
		if q < 0 {
			return len(obj)
		}
		i += q
		// The quote is escaped when an odd number of backslashes precede it.
		backslashes := 0
		for j := i - 1; j > start && obj[j] == '\\'; j-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return i
		}
		i++
	}
}

// lastNonSpace returns the index of the last byte before i that is not
// JSON whitespace ('{' at worst, for a member of a valid object).
func lastNonSpace(b []byte, i int) int {
	for i--; i > 0; i-- {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return i
	}
	return 0
}

// validateEnvelope checks the CloudEvents attributes (cloudevent.Validate)
// and that every extension the gateway gives a meaning to (API.md §1:
// dataversion, messagegroup, deduplicationid, correlationid, causationid,
// traceparent, tracestate), when present, is a string: a number or a
// boolean there makes the envelope invalid (400).
func validateEnvelope(ev *cloudevent.Event) error {
	errs := []error{ev.Validate()}
	for _, name := range slices.Sorted(maps.Keys(ev.Extensions)) {
		switch name {
		case cloudevent.ExtDataVersion, cloudevent.ExtMessageGroup, cloudevent.ExtDeduplicationID,
			cloudevent.ExtCorrelationID, cloudevent.ExtCausationID, cloudevent.ExtTraceParent, cloudevent.ExtTraceState:
			if _, isString := ev.Extensions[name].(string); !isString {
				errs = append(errs, &cloudevent.AttributeError{Name: name, Message: "must be a string"})
			}
		}
	}
	return flattenJoin(errs)
}

// flattenJoin joins errs (nil ones dropped) into one error whose Unwrap
// lists each attribute error once, also those of a joined error in errs.
func flattenJoin(errs []error) error {
	var flat []error
	for _, e := range errs {
		if e == nil {
			continue
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok { // walking a join, not matching
			flat = append(flat, j.Unwrap()...)
			continue
		}
		flat = append(flat, e)
	}
	return errors.Join(flat...)
}

func decodeBatch(body []byte, limits Limits) ([]cloudevent.Event, *Error) {
	trimmed := bytes.TrimSpace(body)
	if !json.Valid(trimmed) {
		return nil, badRequest("the body is not well-formed JSON", Violation{Pointer: "", Message: "malformed JSON: " + syntaxError(trimmed)})
	}
	var items []json.RawMessage
	if err := json.Unmarshal(trimmed, &items); err != nil {
		return nil, badRequest("a batch must be a JSON array of events", Violation{Pointer: "", Message: "must be a JSON array"})
	}
	if len(items) > limits.MaxBatch {
		return nil, tooLarge(fmt.Sprintf("the batch has %d events, more than the limit of %d", len(items), limits.MaxBatch))
	}
	if len(items) == 0 {
		return nil, badRequest("a batch must hold at least one event", Violation{Pointer: "", Message: "must not be empty"})
	}
	events := make([]cloudevent.Event, len(items))
	// Each item's first failing step decides its answer; the batch answers
	// the earliest step any item fails (400 before 422), with the
	// violations of that step.
	var first *Error
	for i, raw := range items {
		prefix := "/" + strconv.Itoa(i)
		if int64(len(raw)) > limits.MaxEventBytes {
			return nil, tooLarge(fmt.Sprintf("event %d exceeds %d bytes", i, limits.MaxEventBytes),
				Violation{Pointer: prefix, Message: fmt.Sprintf("exceeds %d bytes", limits.MaxEventBytes)})
		}
		ev, perr := decodeStructured(raw, prefix)
		switch {
		case perr == nil:
			events[i] = ev
		case first == nil || perr.Status < first.Status:
			first = &Error{Status: perr.Status, Title: perr.Title, Detail: "the batch holds invalid events; nothing was stored", Violations: perr.Violations}
		case perr.Status == first.Status:
			first.Violations = append(first.Violations, perr.Violations...)
		}
	}
	if first != nil {
		return nil, first
	}
	return events, nil
}

func decodeBinary(h http.Header, body []byte) (cloudevent.Event, *Error) {
	ev := cloudevent.Event{}
	var violations []Violation
	for name, values := range h {
		lower := strings.ToLower(name)
		if !strings.HasPrefix(lower, "ce-") || len(values) == 0 {
			continue
		}
		attr := lower[3:]
		v, err := url.PathUnescape(values[0])
		if err != nil {
			v = values[0]
		}
		if !utf8.ValidString(v) {
			violations = append(violations, Violation{Pointer: "/" + escapePointerToken(attr), Message: "must be valid UTF-8 (after percent-decoding)"})
			continue
		}
		switch attr {
		case "specversion":
			ev.SpecVersion = v
		case "id":
			ev.ID = v
		case "source":
			ev.Source = v
		case "type":
			ev.Type = v
		case "subject":
			ev.Subject = v
		case "dataschema":
			ev.DataSchema = v
		case "datacontenttype", "data", "data_base64":
			violations = append(violations, Violation{Pointer: "/" + attr, Message: "is not an attribute header in binary mode"})
		case "time":
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				violations = append(violations, Violation{Pointer: "/time", Message: "must be an RFC 3339 timestamp"})
				continue
			}
			ev.Time = t
		default:
			if ev.Extensions == nil {
				ev.Extensions = make(map[string]any)
			}
			ev.Extensions[attr] = v
		}
	}
	if len(violations) > 0 {
		return ev, badRequest("the event envelope is invalid", violations...)
	}
	ct := h.Get("Content-Type")
	ev.DataContentType = ct
	if len(body) > 0 {
		mt, _, _ := mime.ParseMediaType(ct)
		switch {
		case isJSONMediaType(mt) || ct == "":
			if !json.Valid(body) {
				return ev, badRequest("the body is not well-formed JSON", Violation{Pointer: "/data", Message: "malformed JSON: " + syntaxError(body)})
			}
			if !utf8.Valid(body) {
				return ev, badRequest("JSON data must be UTF-8", Violation{Pointer: "/data", Message: "must be valid UTF-8"})
			}
			ev.Data = append(json.RawMessage(nil), bytes.TrimSpace(body)...)
		case strings.HasPrefix(mt, "text/") && utf8.Valid(body):
			s, _ := json.Marshal(string(body)) //nolint:errchkjson // a Go string always encodes
			ev.Data = s
		default:
			// Binary data, and text that is not UTF-8 (Latin-1, say): a JSON
			// string would replace its bytes, so it is kept as data_base64.
			ev.DataBase64 = append([]byte(nil), body...)
		}
	}
	if err := validateEnvelope(&ev); err != nil {
		return ev, envelopeError(err, "")
	}
	if err := ev.CheckDeliverable(); err != nil {
		return ev, undeliverableError(err, "")
	}
	return ev, nil
}

func isJSONMediaType(mt string) bool {
	return mt == contentTypeJSON || strings.HasSuffix(mt, "+json") || mt == "text/json"
}

// envelopeError turns the attribute errors of an event into a 400 with one
// violation per attribute.
func envelopeError(err error, prefix string) *Error {
	return badRequest("the event is not a valid CloudEvent", attributeViolations(err, prefix)...)
}

// undeliverableError turns what cloudevent.Event.CheckDeliverable found into
// a 422 with one violation per attribute: a well-formed event that breaks a
// rule of the gateway.
func undeliverableError(err error, prefix string) *Error {
	return unprocessable("the event breaks the gateway's limits or cannot be delivered as it is", attributeViolations(err, prefix)...)
}

// attributeViolations locates each attribute error of err (one, or a join)
// at prefix + "/" + its name, or at prefix when it has no name.
func attributeViolations(err error, prefix string) []Violation {
	var violations []Violation
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok { // walking a join, not matching
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		if ae, ok := errors.AsType[*cloudevent.AttributeError](e); ok {
			ptr := prefix
			if ae.Name != "" {
				ptr += "/" + escapePointerToken(ae.Name)
			}
			violations = append(violations, Violation{Pointer: ptr, Message: ae.Message})
			continue
		}
		violations = append(violations, Violation{Pointer: prefix, Message: e.Error()})
	}
	return violations
}

// readError answers a request body that could not be read. The client is
// at fault either way: a body that stopped before its Content-Length, or
// broken chunked framing, is a 400; one that did not arrive within the
// server's read timeout (http.Server.ReadTimeout) a 408.
func readError(err error) *Error {
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &Error{
			Status: http.StatusRequestTimeout, Title: "Request Timeout",
			Detail: "the request body did not arrive in time: " + err.Error(),
		}
	}
	return badRequest("the request body could not be read (cut off or malformed): " + err.Error())
}

// syntaxError describes where a JSON document breaks.
func syntaxError(b []byte) string {
	var v any
	err := json.Unmarshal(b, &v)
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fmt.Sprintf("%s at offset %d", se.Error(), se.Offset)
	}
	if err != nil {
		return err.Error()
	}
	return "invalid JSON"
}
