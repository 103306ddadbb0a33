package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
)

// decodeJSON reads a JSON request body into dst. A body not declared JSON
// is a 415 (requireJSON, api/guard.go); malformed JSON is a 400; a value of
// the wrong type is a 422 pointing at it.
func decodeJSON(r *http.Request, dst any, maxBytes int64) error {
	if err := requireJSON(r); err != nil {
		return err
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBytes+1))
	if err != nil {
		return badRequest("the request body could not be read")
	}
	if int64(len(body)) > maxBytes {
		return newProblem(http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body exceeds %d bytes", maxBytes))
	}
	if !json.Valid(body) {
		return badRequest("the body is not well-formed JSON", FieldError{Pointer: "", Message: "malformed JSON"})
	}
	if string(bytes.TrimSpace(body)) == "null" && wantsObject(dst) {
		// json.Unmarshal takes null as "nothing to do"; a body that must be
		// an object breaks that rule (422, as any other non-object does).
		return unprocessable("a field has the wrong type", FieldError{Pointer: "", Message: "must be an object"})
	}
	if ce, err := memberCase(body, reflect.TypeOf(dst)); err == nil && ce != nil {
		// encoding/json would take the member for ce.want (strict_json.go).
		return unprocessable("member names are case-sensitive", FieldError{
			Pointer: ce.pointer,
			Message: "unknown member: names are case-sensitive (did you mean " + ce.want + "?)",
		})
	}
	if err := json.Unmarshal(body, dst); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			ptr, found := pointerAt(body, te.Offset)
			if !found {
				ptr = "/" + strings.ReplaceAll(te.Field, ".", "/")
				if te.Field == "" {
					ptr = ""
				}
			}
			return unprocessable("a field has the wrong type", FieldError{Pointer: ptr, Message: "must be " + jsonKind(te.Type.Kind().String())})
		}
		return unprocessable(err.Error(), FieldError{Pointer: "", Message: err.Error()})
	}
	return nil
}

// pointerAt returns the JSON pointer of the innermost value of the
// document body that ends at or spans offset: where json.Unmarshal reports a
// value of the wrong type. (UnmarshalTypeError.Field names Go's embedded
// structs and leaves out array indexes, so it is no pointer into the body.)
func pointerAt(body []byte, offset int64) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	ptr, found, err := valuePointer(dec, "", offset)
	if err != nil {
		return "", false
	}
	return ptr, found
}

// valuePointer reads one JSON value from dec, whose pointer is path, and
// reports the pointer of its innermost value that spans offset.
func valuePointer(dec *json.Decoder, path string, offset int64) (string, bool, error) {
	start := dec.InputOffset()
	tok, err := dec.Token()
	if err != nil {
		return "", false, fmt.Errorf("read token: %w", err)
	}
	switch tok {
	case json.Delim('{'):
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return "", false, fmt.Errorf("read key: %w", err)
			}
			name, _ := key.(string)
			if ptr, found, err := valuePointer(dec, path+"/"+pointerToken(name), offset); err != nil || found {
				return ptr, found, err
			}
		}
		if _, err := dec.Token(); err != nil {
			return "", false, fmt.Errorf("read object end: %w", err)
		}
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if ptr, found, err := valuePointer(dec, path+"/"+strconv.Itoa(i), offset); err != nil || found {
				return ptr, found, err
			}
		}
		if _, err := dec.Token(); err != nil {
			return "", false, fmt.Errorf("read array end: %w", err)
		}
	}
	return path, start < offset && offset <= dec.InputOffset(), nil
}

// pointerToken escapes one reference token of a JSON pointer (RFC
// 6901: ~ as ~0, / as ~1).
func pointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// wantsObject reports whether dst points to a struct or a map: a value
// only a JSON object decodes into.
func wantsObject(dst any) bool {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer {
		return false
	}
	k := v.Type().Elem().Kind()
	return k == reflect.Struct || k == reflect.Map
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int64", "int32", "float64", "float32", "uint", "uint64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	}
	return "of another type"
}

// reDecode decodes an already parsed JSON object into dst, reporting a
// member of the wrong type as a 422 pointing at it.
func reDecode(raw map[string]any, dst any) error {
	b, err := json.Marshal(raw)
	if err != nil {
		return fmt.Errorf("re-encode body: %w", err)
	}
	r, _ := http.NewRequest(http.MethodPost, "/", strings.NewReader(string(b))) //nolint:noctx // in-memory body only
	r.Header.Set("Content-Type", "application/json")
	return decodeJSON(r, dst, int64(len(b))+1)
}
