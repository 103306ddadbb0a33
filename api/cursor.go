package api

import (
	"crypto/sha256"
	"encoding/base64"
	"unicode/utf8"
)

// cursorTagLen is how many bytes of a route's hash tag its cursors.
const cursorTagLen = 4

// encodeCursor returns the opaque cursor of a list page (API.md
// conventions): the tag of the list's route, then key, the position the
// next page starts after (a store cursor, or the sort key of a list cut in
// the API), base64url-encoded. The tag makes a cursor of one list useless
// on another.
func encodeCursor(route, key string) string {
	tag := sha256.Sum256([]byte(route))
	return base64.RawURLEncoding.EncodeToString(append(tag[:cursorTagLen], key...))
}

// decodeCursor returns the key of a cursor encodeCursor made for route. A
// cursor that is not base64url, has no key, or was made for another list is
// refused (422): lists never silently ignore a cursor they did not give.
// (Cursors are not signed: a client that forges one of the right form only
// pages from where it chose.)
func decodeCursor(route, cursor string) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	tag := sha256.Sum256([]byte(route))
	if err != nil || len(raw) <= cursorTagLen || string(raw[:cursorTagLen]) != string(tag[:cursorTagLen]) ||
		!utf8.Valid(raw[cursorTagLen:]) {
		return "", unprocessable("cursor is not one this list returned",
			FieldError{Pointer: "", Message: "query parameter cursor is invalid: pass the nextCursor of the previous page of this list"})
	}
	return string(raw[cursorTagLen:]), nil
}
