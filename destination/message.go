package destination

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
)

// Message is one delivery attempt as a broker carries it, whatever the
// broker: [NewMessage] builds it after the type's [Binding], and the
// type's [Publisher] maps it onto the broker's own message.
type Message struct {
	// Body is the stored CloudEvent (structured content mode) or its data
	// (binary content mode, dataOnly).
	Body []byte
	// ContentType is "application/cloudevents+json" in structured mode,
	// the event's datacontenttype in binary mode. It is also in Headers
	// under Binding.ContentTypeHeader when the binding has one.
	ContentType string
	// Headers are the message's headers or attributes as the binding
	// names them: the subscription's headers, the CloudEvents attributes
	// in binary mode, traceparent and tracestate, the content type, the
	// job id and hooklane-attempt.
	Headers map[string]string
	// Key is the job's messageGroup ("{subscription code}:{group}"): the
	// Kafka record key, the Pub/Sub ordering key, the SQS MessageGroupId
	// of a FIFO queue. "" for a job without a group.
	Key string
	// JobID is the dispatch job's id, the same on every attempt:
	// consumers deduplicate on it.
	JobID string
	// Attempt is the attempt number, from 1.
	Attempt int
}

// Envelope is what a delivery attempt is made of, before a binding shapes
// it into a [Message].
type Envelope struct {
	// Event is the stored CloudEvent's JSON: the structured-mode body.
	Event []byte
	// DataOnly asks for binary content mode: the body is the data.
	DataOnly bool
	// Headers are the subscription's headers.
	Headers map[string]string
	// JobID, Attempt and Group are the job's id, the attempt number and
	// the job's messageGroup.
	JobID   string
	Attempt int
	Group   string
	// TraceParent is the W3C traceparent of the attempt's span; "" sends
	// the event's traceparent extension, if any.
	TraceParent string
	// ReplaceBody asks for Body in place of the body the content mode
	// makes (a subscription's transformation changed the payload, API.md
	// §16): the whole body in structured mode, the data in binary mode,
	// whose other attributes still travel as headers.
	ReplaceBody bool
	Body        []byte
	// ContentType, when not empty, replaces the content type the content
	// mode makes (the transformation's).
	ContentType string
}

// Delivery metadata names (API.md §15).
const (
	// HeaderJobID carries the job id where the binding has no property of
	// its own for it.
	HeaderJobID = "hooklane-job-id"
	// HeaderAttempt carries the attempt number.
	HeaderAttempt = "hooklane-attempt"
	// HeaderTraceParent and HeaderTraceState carry the W3C trace context.
	HeaderTraceParent = "traceparent"
	HeaderTraceState  = "tracestate"
	// ContentTypeStructured is the content type of a structured-mode
	// message.
	ContentTypeStructured = "application/cloudevents+json"
)

// NewMessage builds the message of a delivery attempt after binding b:
// structured content mode (the stored event as the body, content type
// application/cloudevents+json) unless e.DataOnly, binary content mode
// then (the data as the body, its datacontenttype as the content type,
// every other attribute a header named b.AttrPrefix + its name, its value
// as stored, as a string). The subscription's headers come first, so that
// none of them replaces an attribute or the delivery metadata; a header
// that differs from one of those in case only is dropped. A transformed
// body and content type (e.ReplaceBody, e.ContentType) replace the content
// mode's.
func NewMessage(b Binding, e *Envelope) (*Message, error) {
	attrs, err := decodeAttributes(e.Event)
	if err != nil {
		return nil, err
	}
	m := &Message{Key: e.Group, JobID: e.JobID, Attempt: e.Attempt, Headers: make(map[string]string, len(e.Headers)+len(attrs)+5)}
	own := map[string]string{}
	if e.DataOnly && b.Binary {
		m.Body, m.ContentType, err = binaryBody(attrs)
		if err != nil {
			return nil, err
		}
		for name, raw := range attrs {
			if name == "data" || name == "data_base64" || name == "datacontenttype" {
				continue
			}
			own[b.AttrPrefix+name] = attributeString(raw)
		}
	} else {
		m.Body = e.Event
		m.ContentType = ContentTypeStructured
	}
	if e.ReplaceBody {
		m.Body = e.Body
	}
	m.ContentType = cmp.Or(e.ContentType, m.ContentType)
	if tp := cmp.Or(e.TraceParent, attributeString(attrs["traceparent"])); tp != "" {
		own[HeaderTraceParent] = tp
	}
	if ts := attributeString(attrs["tracestate"]); ts != "" {
		own[HeaderTraceState] = ts
	}
	if b.ContentTypeHeader != "" {
		own[b.ContentTypeHeader] = m.ContentType
	}
	if b.JobIDHeader != "" {
		own[b.JobIDHeader] = e.JobID
	}
	own[HeaderAttempt] = strconv.Itoa(e.Attempt)
	reserved := make(map[string]bool, len(own))
	for k := range own {
		reserved[strings.ToLower(k)] = true
	}
	for k, v := range e.Headers {
		if !reserved[strings.ToLower(k)] {
			m.Headers[k] = v
		}
	}
	maps.Copy(m.Headers, own)
	return m, nil
}

// decodeAttributes splits a stored CloudEvent into its members.
func decodeAttributes(event []byte) (map[string]json.RawMessage, error) {
	var attrs map[string]json.RawMessage
	if err := json.Unmarshal(event, &attrs); err != nil || attrs == nil {
		return nil, fmt.Errorf("decode stored event: not a JSON object: %w", err)
	}
	return attrs, nil
}

// binaryBody returns the data of a CloudEvent and its content type, as
// the HTTP binary mode of §6 does: data_base64 decoded, text data of a
// non-JSON type as the text itself, JSON data as it is; application/json
// when the event has no datacontenttype.
func binaryBody(attrs map[string]json.RawMessage) ([]byte, string, error) {
	ct := attributeString(attrs["datacontenttype"])
	if raw, ok := attrs["data_base64"]; ok && !isNull(raw) {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, "", fmt.Errorf("decode data_base64: %w", err)
		}
		body, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, "", fmt.Errorf("decode data_base64: %w", err)
		}
		return body, cmp.Or(ct, "application/json"), nil
	}
	body := []byte(attrs["data"])
	if isNull(body) {
		body = nil
	}
	if ct != "" && !isJSONType(ct) {
		var s string
		if err := json.Unmarshal(body, &s); err == nil {
			body = []byte(s)
		}
	}
	return body, cmp.Or(ct, "application/json"), nil
}

// attributeString is the string form of an attribute: a string as it is,
// a number or boolean as written; "" when absent.
func attributeString(raw json.RawMessage) string {
	if len(raw) == 0 || isNull(raw) {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	return string(bytes.TrimSpace(raw))
}

func isNull(raw []byte) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

func isJSONType(ct string) bool {
	ct = strings.ToLower(strings.TrimSpace(strings.SplitN(ct, ";", 2)[0]))
	return ct == "application/json" || strings.HasSuffix(ct, "+json")
}
