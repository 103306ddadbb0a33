package cloudevent

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"unicode/utf8"
)

// member is one member of an event's JSON object: its name and its value's
// JSON text.
type member struct {
	name  string
	value []byte
}

// members are the members of an event's JSON object, each name once (the
// last of a repeated name wins, as encoding/json decodes into a map), in
// name order.
type members []member

// get returns the value of the member name.
func (ms members) get(name string) ([]byte, bool) {
	for i := range ms {
		if ms[i].name == name {
			return ms[i].value, true
		}
	}
	return nil, false
}

// fastMembersMax bounds the members the fast path collects: past it the
// names are looked up in a map (get is a linear scan).
const fastMembersMax = 32

// eventMembers splits an event's JSON object into its members. copied
// says whether the values are copies (else they alias b). The usual event
// — valid UTF-8, no escape in a name, a few dozen members at most — is
// split by one validating pass and one light scan; any other input goes
// through encoding/json, which gives the errors (and the replacement of
// invalid bytes in names) the API has always given.
func eventMembers(b []byte) (ms members, copied bool, err error) {
	if json.Valid(b) && utf8.Valid(b) {
		if ms, ok := scanMembers(b); ok {
			return ms, false, nil
		}
	}
	ms, err = decodeMembers(b)
	return ms, true, err
}

// decodeMembers splits b by encoding/json; the values are copies.
func decodeMembers(b []byte) (members, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err //nolint:wrapcheck // the JSON error is the message
	}
	if raw == nil {
		return nil, errors.New("event must be a JSON object")
	}
	ms := make(members, 0, len(raw))
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		ms = append(ms, member{name: k, value: raw[k]})
	}
	return ms, nil
}

// scanMembers splits b, valid JSON, when it is an object whose names hold
// no escape and that has at most fastMembersMax members; ok is false for
// anything else (the caller takes the general path).
func scanMembers(b []byte) (ms members, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	i = skipSpace(b, i+1)
	ms = make(members, 0, 12)
	if i < len(b) && b[i] == '}' {
		return ms, true
	}
	for i < len(b) && b[i] == '"' {
		end := stringEnd(b, i)
		if end < 0 {
			return nil, false
		}
		name := b[i+1 : end-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			return nil, false
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		i = skipSpace(b, i+1)
		vend := valueEnd(b, i)
		if vend < 0 {
			return nil, false
		}
		ms, ok = ms.put(string(name), b[i:vend])
		if !ok {
			return nil, false
		}
		i = skipSpace(b, vend)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			slices.SortFunc(ms, func(a, b member) int { return cmp.Compare(a.name, b.name) })
			return ms, true
		}
		return nil, false
	}
	return nil, false
}

// put sets the member name, replacing an earlier one; ok is false past
// fastMembersMax.
func (ms members) put(name string, value []byte) (members, bool) {
	for i := range ms {
		if ms[i].name == name {
			ms[i].value = value
			return ms, true
		}
	}
	if len(ms) == fastMembersMax {
		return ms, false
	}
	return append(ms, member{name: name, value: value}), true
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index just past the JSON string starting at b[i],
// -1 when b ends first.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// valueEnd returns the index just past the JSON value starting at b[i]
// (b being valid JSON), -1 when b ends first.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := stringEnd(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}
