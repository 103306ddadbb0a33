package cloudevent

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Limits on what one event may carry. Every extension is stored as its own
// indexed row (the embedded store) or field (MongoDB) and filtered on, and
// every attribute goes out as an HTTP header when a subscription delivers in
// CloudEvents binary mode (dataOnly); without these bounds one request of a
// few megabytes could hold the store's write lock for seconds and make
// deliveries that no receiver accepts.
const (
	// MaxExtensions is the most extension attributes one event may carry:
	// the gateway's own seven, the CloudEvents documented extensions and
	// room for the producer's own filterable context, while a batch of
	// MaxBatch events stays a bounded number of stored rows.
	MaxExtensions = 50
	// MaxNameLength is the longest extension attribute name. CloudEvents
	// asks for at most 20 characters; 64 leaves room for descriptive names.
	MaxNameLength = 64
	// MaxValueBytes is the longest value of any one attribute (id, source,
	// type, subject, dataschema, datacontenttype or an extension), in bytes
	// of its string form: one ce-* header line stays well under the 8 KiB a
	// default nginx accepts per header line.
	MaxValueBytes = 4096
	// MaxAttributesBytes bounds all attributes of one event together (the
	// names and values of those above): sent as headers next to the
	// gateway's own (about 1 KiB), they stay within the 16 KiB of headers
	// Node.js accepts by default and within the gateway's own 64 KiB.
	MaxAttributesBytes = 8192
)

// CheckDeliverable checks the rules that let the gateway store the event
// and deliver it exactly as it came, beyond the envelope rules of
// [Event.Validate]:
//   - at most MaxExtensions extensions, each string attribute at most
//     MaxValueBytes and all of them together at most MaxAttributesBytes;
//   - every string attribute can be sent as an HTTP header field value
//     (httpfield.CheckValue): binary-mode deliveries send each as a ce-*
//     header, and traceparent and tracestate go out as headers on every
//     delivery;
//   - traceparent and tracestate, when present, follow W3C Trace Context.
//
// It returns every problem found, joined, ordered by attribute name; each
// is an *AttributeError, whose Name is "" when the problem is the event as a
// whole. Too many extensions is reported alone, without looking at them.
func (e *Event) CheckDeliverable() error {
	if n := len(e.Extensions); n > MaxExtensions {
		return &AttributeError{Message: fmt.Sprintf("carries %d extension attributes; at most %d are allowed", n, MaxExtensions)}
	}
	var errs []*AttributeError
	total := 0
	check := func(name, v string) bool {
		total += len(name) + len(v)
		if len(v) > MaxValueBytes {
			errs = append(errs, &AttributeError{Name: name, Message: fmt.Sprintf("must be at most %d bytes (it has %d)", MaxValueBytes, len(v))})
			return false
		}
		if err := CheckHeaderValue(v); err != nil {
			errs = append(errs, &AttributeError{Name: name, Message: err.Error()})
			return false
		}
		return true
	}
	check("specversion", e.SpecVersion)
	check("id", e.ID)
	check("source", e.Source)
	check("type", e.Type)
	check("subject", e.Subject)
	check("dataschema", e.DataSchema)
	check("datacontenttype", e.DataContentType)
	for name, v := range e.Extensions {
		switch x := v.(type) {
		case string:
			if !check(name, x) {
				continue
			}
			var err error
			switch name {
			case ExtTraceParent:
				err = CheckTraceParent(x)
			case ExtTraceState:
				err = CheckTraceState(x)
			}
			if err != nil {
				errs = append(errs, &AttributeError{Name: name, Message: err.Error()})
			}
		case json.Number:
			check(name, string(x))
		case bool:
			total += len(name) + len("false")
		default:
			check(name, e.Ext(name))
		}
	}
	if total > MaxAttributesBytes {
		errs = append(errs, &AttributeError{Message: fmt.Sprintf("the attributes take %d bytes in all; at most %d are allowed", total, MaxAttributesBytes)})
	}
	if len(errs) == 0 {
		return nil
	}
	slices.SortStableFunc(errs, func(a, b *AttributeError) int { return strings.Compare(a.Name, b.Name) })
	out := make([]error, len(errs))
	for i, ae := range errs {
		out[i] = ae
	}
	return errors.Join(out...)
}
