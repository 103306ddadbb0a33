package api

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// Member names in request bodies are case-sensitive. encoding/json matches
// an object member to a struct field ignoring case, so {"ClientId": …}
// would set clientId past every check that looks for the exact key (the
// tenant-escape of issue 28). memberCase walks a well-formed body beside
// the Go type it is about to be decoded into and reports the first member
// whose name equals a field's name only when case is ignored: that member
// is a 422 at its pointer, on every route that decodes through decodeJSON.
// A member that matches no field at all is still ignored, so an answer
// sent back as a PATCH (with its read-only members) keeps working.

// caseError is a member named like a field in another case.
type caseError struct {
	pointer string
	want    string
}

// memberCase reports the first differently-cased member of body for a
// value of type t, or nil. body must be well-formed JSON.
func memberCase(body []byte, t reflect.Type) (*caseError, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	return walkCase(dec, t, "")
}

// walkCase reads one value from dec, whose pointer is path and whose Go
// type is t, and reports the first differently-cased member inside it.
func walkCase(dec *json.Decoder, t reflect.Type, path string) (*caseError, error) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || ownDecoding(t) {
		return nil, skipValue(dec)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("read token: %w", err)
	}
	switch tok {
	case json.Delim('{'):
		return walkObject(dec, t, path)
	case json.Delim('['):
		var elem reflect.Type
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if ce, err := walkCase(dec, elem, fmt.Sprintf("%s/%d", path, i)); ce != nil || err != nil {
				return ce, err
			}
		}
		_, err := dec.Token()
		return nil, wrapToken(err)
	}
	return nil, nil //nolint:nilnil // a scalar holds no member: nothing found and nothing wrong
}

// walkObject walks the members of an object whose '{' has been read.
func walkObject(dec *json.Decoder, t reflect.Type, path string) (*caseError, error) {
	var fields map[string]reflect.Type
	var elem reflect.Type
	switch t.Kind() {
	case reflect.Struct:
		fields = jsonFields(t)
	case reflect.Map:
		elem = t.Elem()
	default:
		// An interface or a type that takes anything: nothing to hold
		// the names against.
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("read key: %w", err)
		}
		name, _ := tok.(string)
		ptr := path + "/" + pointerToken(name)
		next := elem
		if fields != nil {
			ft, exact := fields[name]
			if !exact {
				for want := range fields {
					if strings.EqualFold(want, name) {
						return &caseError{pointer: ptr, want: want}, nil
					}
				}
			}
			next = ft
		}
		if ce, err := walkCase(dec, next, ptr); ce != nil || err != nil {
			return ce, err
		}
	}
	_, err := dec.Token()
	return nil, wrapToken(err)
}

// ownDecoding reports whether values of t decode themselves: their
// members are theirs to read.
func ownDecoding(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return pt.Implements(reflect.TypeFor[json.Unmarshaler]()) ||
		pt.Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) ||
		t.Kind() == reflect.Interface
}

// jsonFields returns the JSON member names of struct t with their types,
// with the fields of embedded structs promoted as encoding/json does.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	addFields(t, out, 0)
	return out
}

func addFields(t reflect.Type, out map[string]reflect.Type, depth int) {
	if depth > 8 {
		return
	}
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			addFields(ft, out, depth+1)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		// An outer field wins over a promoted one of the same name.
		if _, taken := out[name]; !taken || depth == 0 {
			out[name] = f.Type
		}
	}
}

// skipValue reads and drops one whole value from dec.
func skipValue(dec *json.Decoder) error {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("skip value: %w", err)
	}
	return nil
}

func wrapToken(err error) error {
	if err != nil {
		return fmt.Errorf("read end: %w", err)
	}
	return nil
}
