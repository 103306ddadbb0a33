package destination

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Fields reads a JSON object field by field for a [Type]'s Decode,
// collecting a problem at the pointer of every field that breaks a rule,
// and at every field nobody read ("is not a field of ..."). A null field
// reads as absent. Pointers are relative to the destination.
type Fields struct {
	prefix   string
	what     string
	m        map[string]json.RawMessage
	seen     map[string]bool
	problems *[]Problem
}

// NewFields reads raw, the destination object of type typeName; its
// "type" field is read already.
func NewFields(raw []byte, typeName string) *Fields {
	f := &Fields{what: "a " + typeName + " destination", seen: map[string]bool{"type": true}, problems: &[]Problem{}}
	if err := json.Unmarshal(raw, &f.m); err != nil || f.m == nil {
		f.add("", "must be an object")
	}
	return f
}

// Object returns the object at name, nil when it is absent (or not an
// object: a problem then).
func (f *Fields) Object(name string) *Fields {
	raw, ok := f.Raw(name)
	if !ok {
		return nil
	}
	o := &Fields{prefix: f.Pointer(name), what: "the " + name + " object", seen: map[string]bool{}, problems: f.problems}
	if err := json.Unmarshal(raw, &o.m); err != nil || o.m == nil {
		f.Problemf(name, "must be an object")
		return nil
	}
	return o
}

// Raw returns the JSON of a field that is present and not null, and marks
// it read.
func (f *Fields) Raw(name string) (json.RawMessage, bool) {
	f.seen[name] = true
	raw, ok := f.m[name]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, false
	}
	return raw, true
}

// String returns an optional string field, "" when absent.
func (f *Fields) String(name string) string {
	raw, ok := f.Raw(name)
	if !ok {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		f.Problemf(name, "must be a string")
		return ""
	}
	return s
}

// RequiredString returns a string field that must be present and not
// empty.
func (f *Fields) RequiredString(name string) string {
	raw, ok := f.Raw(name)
	if !ok {
		f.Problemf(name, "is required")
		return ""
	}
	var s string
	switch err := json.Unmarshal(raw, &s); {
	case err != nil:
		f.Problemf(name, "must be a string")
	case s == "":
		f.Problemf(name, "must not be empty")
	}
	return s
}

// Bool returns a boolean field, def when absent.
func (f *Fields) Bool(name string, def bool) bool {
	raw, ok := f.Raw(name)
	if !ok {
		return def
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		f.Problemf(name, "must be a boolean")
		return def
	}
	return b
}

// RequiredStrings returns a non-empty array of non-empty strings; each
// bad element is a problem at its index.
func (f *Fields) RequiredStrings(name string) []string {
	raw, ok := f.Raw(name)
	if !ok {
		f.Problemf(name, "is required")
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		f.Problemf(name, "must be an array of strings")
		return nil
	}
	if len(items) == 0 {
		f.Problemf(name, "must not be empty")
		return nil
	}
	out := make([]string, 0, len(items))
	for i, item := range items {
		var s string
		if err := json.Unmarshal(item, &s); err != nil || s == "" {
			f.Problemf(name+"/"+strconv.Itoa(i), "must be a non-empty string")
			continue
		}
		out = append(out, s)
	}
	return out
}

// Pointer is the JSON pointer of the field name (a token, or tokens
// joined with "/"), relative to the destination.
func (f *Fields) Pointer(name string) string { return f.prefix + "/" + name }

// Problemf records a problem at the field name.
func (f *Fields) Problemf(name, format string, args ...any) {
	f.add(f.Pointer(name), fmt.Sprintf(format, args...))
}

func (f *Fields) add(pointer, msg string) {
	*f.problems = append(*f.problems, Problem{Pointer: pointer, Message: msg})
}

// Err returns the problems found so far, with one for every field of this
// object (not of the objects read from it) that was never read, as a
// *ValidationError; nil when there are none. Call it last, on the
// top-level Fields, after calling [Fields.Done] on each nested object.
func (f *Fields) Err() error {
	f.Done()
	return invalid(*f.problems)
}

// Done records a problem for every field of this object that was never
// read.
func (f *Fields) Done() {
	for _, k := range slices.Sorted(maps.Keys(f.m)) {
		if !f.seen[k] {
			f.add(f.Pointer(EscapePointer(k)), "is not a field of "+f.what)
			f.seen[k] = true
		}
	}
}

// URL checks that s is an absolute URL with one of schemes and a host,
// recording a problem at name otherwise; nil then.
func (f *Fields) URL(name, s string, schemes ...string) *url.URL {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		f.Problemf(name, "must be an absolute URL with a host (%s)", strings.Join(schemes, ", "))
		return nil
	}
	if !slices.Contains(schemes, strings.ToLower(u.Scheme)) {
		f.Problemf(name, "must be a URL with the scheme %s", strings.Join(schemes, " or "))
		return nil
	}
	if p := u.Port(); p != "" && !validPort(p) {
		f.Problemf(name, "has an invalid port %q", p)
		return nil
	}
	return u
}

// HostPort checks that s is "host:port", recording a problem at name
// otherwise; ok is false then.
func (f *Fields) HostPort(name, s string) (Address, bool) {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" || !validPort(port) {
		f.Problemf(name, "must be host:port")
		return Address{}, false
	}
	return Address{Pointer: f.Pointer(name), Host: host, Port: port}, true
}

// URLAddress is the address of a URL checked by [Fields.URL], at pointer.
func URLAddress(pointer string, u *url.URL) Address {
	return Address{Pointer: pointer, Host: u.Hostname(), Port: u.Port()}
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n <= 65535
}
