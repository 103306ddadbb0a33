// Package cloudevent is the CloudEvents 1.0 event as Hooklane stores and
// delivers it, with its JSON (structured mode) encoding.
//
// The package knows the format only; parsing the three HTTP content modes and
// the validation rules of the ingest pipeline live in package ingest.
package cloudevent

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// SpecVersion is the only CloudEvents version Hooklane accepts.
const SpecVersion = "1.0"

// Extension attribute names the gateway gives a meaning to.
const (
	ExtDataVersion     = "dataversion"
	ExtMessageGroup    = "messagegroup"
	ExtDeduplicationID = "deduplicationid"
	ExtCorrelationID   = "correlationid"
	ExtCausationID     = "causationid"
	ExtTraceParent     = "traceparent"
	ExtTraceState      = "tracestate"
)

// Event is one CloudEvent. Attributes keep their specification names in
// JSON; every attribute not defined by the specification is an extension.
//
// Data holds the data as a JSON value (for JSON content, or text content
// encoded as a JSON string); DataBase64 holds binary data. At most one of the
// two is set.
type Event struct {
	SpecVersion     string
	ID              string
	Source          string
	Type            string
	Subject         string
	Time            time.Time
	DataContentType string
	DataSchema      string
	// Data is the raw JSON value of the data member, nil when absent.
	Data json.RawMessage
	// DataBase64 is binary data (data_base64 in JSON), nil when absent.
	DataBase64 []byte
	// Extensions maps extension names to their values: string, bool or
	// json.Number.
	Extensions map[string]any
}

// Ext returns the string form of extension name, "" when absent.
func (e *Event) Ext(name string) string {
	v, ok := e.Extensions[name]
	if !ok {
		return ""
	}
	switch x := v.(type) {
	case string:
		return x
	default:
		return fmt.Sprint(x)
	}
}

// Attribute returns the value of a context attribute or extension by its
// CloudEvents name, and whether it is present. Time is returned as an RFC
// 3339 string; extension values keep their JSON type.
func (e *Event) Attribute(name string) (any, bool) {
	str := func(s string) (any, bool) { return s, s != "" }
	switch name {
	case "specversion":
		return str(e.SpecVersion)
	case "id":
		return str(e.ID)
	case "source":
		return str(e.Source)
	case "type":
		return str(e.Type)
	case "subject":
		return str(e.Subject)
	case "time":
		if e.Time.IsZero() {
			return nil, false
		}
		return FormatTime(e.Time), true
	case "datacontenttype":
		return str(e.DataContentType)
	case "dataschema":
		return str(e.DataSchema)
	}
	v, ok := e.Extensions[name]
	return v, ok
}

// FormatTime renders t as the gateway writes every timestamp: UTC, RFC 3339
// with milliseconds and a Z suffix.
func FormatTime(t time.Time) string {
	return t.UTC().Format(timeLayout)
}

// timeLayout is the gateway's timestamp layout: UTC, milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// AppendTime appends t as FormatTime formats it, without an intermediate
// string.
func AppendTime(b []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(b, timeLayout)
}

// reserved are the names that are not extensions.
var reserved = map[string]bool{ //nolint:gochecknoglobals // read-only lookup table
	"specversion": true, "id": true, "source": true, "type": true, "subject": true,
	"time": true, "datacontenttype": true, "dataschema": true, "data": true, "data_base64": true,
}

// IsReserved reports whether name is a specification attribute or a data
// member rather than an extension.
func IsReserved(name string) bool { return reserved[name] }

// MarshalJSON encodes the event in the CloudEvents JSON format. Keys come out
// in a stable order: the specification attributes, the extensions sorted by
// name, then data.
func (e Event) MarshalJSON() ([]byte, error) {
	buf := make([]byte, 0, 256+len(e.Data)+len(e.DataBase64)*4/3)
	buf = append(buf, '{')
	first := true
	key := func(name string) {
		if !first {
			buf = append(buf, ',')
		}
		first = false
		buf = AppendJSONString(buf, name)
		buf = append(buf, ':')
	}
	str := func(name, v string) {
		if v != "" {
			key(name)
			buf = AppendJSONString(buf, v)
		}
	}
	str("specversion", e.SpecVersion)
	str("id", e.ID)
	str("source", e.Source)
	str("type", e.Type)
	str("subject", e.Subject)
	if !e.Time.IsZero() {
		str("time", FormatTime(e.Time))
	}
	str("datacontenttype", e.DataContentType)
	str("dataschema", e.DataSchema)
	for _, k := range slices.Sorted(maps.Keys(e.Extensions)) {
		key(k)
		switch v := e.Extensions[k].(type) {
		case string:
			buf = AppendJSONString(buf, v)
		case json.RawMessage:
			buf = append(buf, v...)
		default:
			b, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("encode attribute %s: %w", k, err)
			}
			buf = append(buf, b...)
		}
	}
	if e.Data != nil {
		key("data")
		buf = append(buf, e.Data...)
	} else if e.DataBase64 != nil {
		str("data_base64", base64.StdEncoding.EncodeToString(e.DataBase64))
	}
	buf = append(buf, '}')
	return buf, nil
}

// AppendJSONString appends s encoded exactly as json.Marshal encodes it.
// Printable ASCII other than the characters json.Marshal escapes (quote,
// backslash and, for HTML safety, <, > and &) is written as is; any other
// string goes through json.Marshal.
func AppendJSONString(b []byte, s string) []byte {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) //nolint:errchkjson // a Go string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// rawString decodes the JSON value v (valid JSON, as json.RawMessage
// holds it) as a string, exactly as json.Unmarshal into a string does;
// ok is false when v is not a string. A string without escapes whose bytes
// are valid UTF-8 is its bytes between the quotes: no second scan.
func rawString(v []byte) (string, bool) {
	if n := len(v); n >= 2 && v[0] == '"' && v[n-1] == '"' {
		inner := v[1 : n-1]
		if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
			return string(inner), true
		}
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false
	}
	return s, true
}

// UnmarshalJSON decodes an event in the CloudEvents JSON format without
// validating it beyond the JSON types of the attributes; see
// [Event.Validate]. Extension numbers are kept as json.Number.
//
// Attribute values must be valid UTF-8: encoding/json would replace invalid
// bytes, and an escaped lone UTF-16 surrogate (\ud800), by U+FFFD, so two
// different ids would decode equal and collide as duplicates. An attribute
// holding either is an *AttributeError. Data is kept byte for byte and not
// checked here (events stored before this rule must still decode); ingest
// checks it.
func (e *Event) UnmarshalJSON(b []byte) error {
	raw, copied, err := eventMembers(b)
	if err != nil {
		return err
	}
	*e = Event{}
	var errs []error
	if !utf8.Valid(b) {
		errs = append(errs, invalidUTF8(raw)...)
	}
	str := func(name string, dst *string) {
		v, ok := raw.get(name)
		if !ok || string(v) == "null" {
			return
		}
		str, ok := rawString(v)
		if !ok {
			errs = append(errs, &AttributeError{Name: name, Message: "must be a string"})
			return
		}
		if hasLoneSurrogate(v) {
			errs = append(errs, &AttributeError{Name: name, Message: msgLoneSurrogate})
		}
		*dst = str
	}
	str("specversion", &e.SpecVersion)
	str("id", &e.ID)
	str("source", &e.Source)
	str("type", &e.Type)
	str("subject", &e.Subject)
	str("datacontenttype", &e.DataContentType)
	str("dataschema", &e.DataSchema)
	var ts string
	str("time", &ts)
	if ts != "" {
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			errs = append(errs, &AttributeError{Name: "time", Message: "must be an RFC 3339 timestamp"})
		} else {
			e.Time = t
		}
	}
	if d, ok := raw.get("data"); ok {
		if !copied {
			d = bytes.Clone(d) // the event keeps no part of b
		}
		e.Data = d
	}
	if d, ok := raw.get("data_base64"); ok && string(d) != "null" {
		var s string
		if err := json.Unmarshal(d, &s); err != nil {
			errs = append(errs, &AttributeError{Name: "data_base64", Message: "must be a base64 string"})
		} else if bin, err := base64.StdEncoding.DecodeString(s); err != nil {
			errs = append(errs, &AttributeError{Name: "data_base64", Message: "must be valid base64"})
		} else {
			e.DataBase64 = bin
		}
		if e.Data != nil {
			errs = append(errs, &AttributeError{Name: "data_base64", Message: "must not be present together with data"})
		}
	}
	for _, m := range raw {
		k, v := m.name, m.value
		if reserved[k] {
			continue
		}
		val, err := decodeExtension(v)
		if err != nil {
			errs = append(errs, &AttributeError{Name: k, Message: err.Error()})
			continue
		}
		if _, isString := val.(string); isString && hasLoneSurrogate(v) {
			errs = append(errs, &AttributeError{Name: k, Message: msgLoneSurrogate})
		}
		if val == nil {
			continue
		}
		if e.Extensions == nil {
			e.Extensions = make(map[string]any, len(raw))
		}
		e.Extensions[k] = val
	}
	return errors.Join(errs...)
}

const msgLoneSurrogate = `must be valid UTF-8: an escaped lone UTF-16 surrogate (\ud800–\udfff without its pair) is not a character`

// invalidUTF8 locates the invalid UTF-8 of an event whose JSON is not
// valid UTF-8: one error per attribute whose value holds some
// (json.RawMessage keeps the bytes as they came). Data is left alone (see
// UnmarshalJSON); a name with invalid bytes decodes with U+FFFD in it,
// which Validate refuses.
func invalidUTF8(raw members) []error {
	var errs []error
	for _, m := range raw {
		if m.name != "data" && !utf8.Valid(m.value) {
			errs = append(errs, &AttributeError{Name: m.name, Message: "must be valid UTF-8"})
		}
	}
	return errs
}

// hasLoneSurrogate reports whether the JSON string v escapes a UTF-16
// surrogate that is not part of a high-low pair. A string without a \u
// escape costs one search.
func hasLoneSurrogate(v []byte) bool {
	if !bytes.Contains(v, []byte(`\u`)) {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] != '\\' {
			continue
		}
		if i+1 >= len(v) || v[i+1] != 'u' {
			i++ // skip the escaped character: \\u is no \u escape
			continue
		}
		r, ok := hex4(v, i+2)
		if !ok {
			continue
		}
		switch {
		case r >= 0xd800 && r < 0xdc00:
			if i+11 < len(v) && v[i+6] == '\\' && v[i+7] == 'u' {
				if lo, ok := hex4(v, i+8); ok && lo >= 0xdc00 && lo < 0xe000 {
					i += 11
					continue
				}
			}
			return true
		case r >= 0xdc00 && r < 0xe000:
			return true
		}
		i += 5
	}
	return false
}

// hex4 decodes the four hex digits of v at i.
func hex4(v []byte, i int) (rune, bool) {
	if i+4 > len(v) {
		return 0, false
	}
	var r rune
	for _, c := range v[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

func decodeExtension(v json.RawMessage) (any, error) {
	// The common values need no decoder: v is valid JSON already.
	switch {
	case len(v) > 0 && v[0] == '"':
		if str, ok := rawString(v); ok {
			return str, nil
		}
	case string(v) == "true":
		return true, nil
	case string(v) == "false":
		return false, nil
	case string(v) == "null":
		return nil, nil //nolint:nilnil // JSON null decodes to a nil value, as json.Unmarshal does
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var val any
	if err := dec.Decode(&val); err != nil {
		return nil, fmt.Errorf("invalid value: %w", err)
	}
	switch val.(type) {
	case nil, string, bool, json.Number:
		return val, nil
	default:
		return nil, errors.New("extension values must be a string, number or boolean")
	}
}

// AttributeError is a problem with one attribute of an event.
type AttributeError struct {
	// Name is the attribute's name, which is also its JSON pointer below the
	// event ("/" + Name).
	Name string
	// Message says what is wrong, for a person.
	Message string
}

func (e *AttributeError) Error() string { return e.Name + ": " + e.Message }

// Validate checks the envelope rules of CloudEvents 1.0 that the gateway
// enforces: specversion "1.0", non-empty id, source and type, extension names
// of lower-case letters and digits. It returns every problem found, joined;
// each is an *AttributeError.
func (e *Event) Validate() error {
	var errs []error
	switch {
	case e.SpecVersion == "":
		errs = append(errs, &AttributeError{Name: "specversion", Message: "is required"})
	case e.SpecVersion != SpecVersion:
		errs = append(errs, &AttributeError{Name: "specversion", Message: `must be "1.0"`})
	}
	for _, a := range []struct{ name, v string }{{"id", e.ID}, {"source", e.Source}, {"type", e.Type}} {
		if strings.TrimSpace(a.v) == "" {
			errs = append(errs, &AttributeError{Name: a.name, Message: "is required and must be a non-empty string"})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(e.Extensions)) {
		switch {
		case len(k) > MaxNameLength:
			errs = append(errs, &AttributeError{Name: k, Message: fmt.Sprintf("extension names must be at most %d characters", MaxNameLength)})
		case !validExtensionName(k):
			errs = append(errs, &AttributeError{Name: k, Message: "extension names must be lower-case letters and digits"})
		}
	}
	return errors.Join(errs...)
}

func validExtensionName(s string) bool {
	if s == "" || len(s) > MaxNameLength {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
