package api

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/cloudevent"
)

// List page sizes (API.md conventions).
const (
	limitDefault = 50
	limitMax     = 500
)

// listParams reads ?limit= (clamped to 1..500) and ?cursor=.
func listParams(c *gin.Context) (limit int, cursor string, err error) {
	limit = limitDefault
	if v := c.Query("limit"); v != "" {
		n, ok := parseCount(v, limitMax)
		if !ok || n < 1 {
			return 0, "", unprocessable("limit must be a positive integer", FieldError{Pointer: "", Message: "query parameter limit must be a positive integer"})
		}
		limit = n
	}
	return limit, c.Query("cursor"), nil
}

// parseCount reads a decimal integer query parameter clamped to at most
// maxN: a number too large even for an int is clamped too (API.md: a limit
// above the maximum is clamped). ok is false when v is no integer.
func parseCount(v string, maxN int) (n int, ok bool) {
	n, err := strconv.Atoi(v)
	if errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(v, "-") {
		return maxN, true
	}
	if err != nil {
		return 0, false
	}
	return min(n, maxN), true
}

// timeParam reads an RFC 3339 query parameter; zero when absent.
func timeParam(c *gin.Context, name string) (time.Time, error) {
	v := c.Query(name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, unprocessable(name+" must be an RFC 3339 timestamp", FieldError{Pointer: "", Message: "query parameter " + name + " must be an RFC 3339 timestamp"})
	}
	return t, nil
}

// page is a list answer.
type page[T any] struct {
	Items      []T     `json:"items"`
	NextCursor *string `json:"nextCursor"`
}

func writePage[T any](c *gin.Context, items []T, next string) {
	if items == nil {
		items = []T{}
	}
	p := page[T]{Items: items}
	if next != "" {
		p.NextCursor = &next
	}
	c.JSON(http.StatusOK, p)
}

// requestWithBody returns a copy of the request carrying body instead.
func requestWithBody(c *gin.Context, body []byte) *http.Request {
	r := c.Request.Clone(c.Request.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	return r
}

func formatTime(t time.Time) string { return cloudevent.FormatTime(t) }

func parseTime(v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse time %q: %w", v, err)
	}
	return t, nil
}

// pageDesc pages a list the store returns whole, newest first: it orders
// items by key, largest first (a ULID or a leading timestamp makes that
// newest first), then cuts the page as pageSorted does.
func pageDesc[T any](items []T, key func(T) string, limit int, cursor string) ([]T, string, error) {
	return pageSorted(items, key, true, limit, cursor)
}

// pageSorted pages a list the store returns whole: it orders items by key
// (descending when desc), keeps those after the cursor and at most limit
// of them. The cursor it returns is the last item's key, encoded so that
// clients treat it as opaque; a cursor this server did not give is a 422.
func pageSorted[T any](items []T, key func(T) string, desc bool, limit int, cursor string) ([]T, string, error) {
	order := func(a, b T) int { return strings.Compare(key(a), key(b)) }
	if desc {
		order = func(a, b T) int { return strings.Compare(key(b), key(a)) }
	}
	slices.SortStableFunc(items, order)
	if cursor != "" {
		after, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil || len(after) == 0 {
			return nil, "", unprocessable("cursor is not one this server returned", FieldError{Pointer: "", Message: "query parameter cursor is invalid"})
		}
		i := 0
		for i < len(items) && (desc && key(items[i]) >= string(after) || !desc && key(items[i]) <= string(after)) {
			i++
		}
		items = items[i:]
	}
	if len(items) <= limit {
		return items, "", nil
	}
	items = items[:limit]
	return items, base64.RawURLEncoding.EncodeToString([]byte(key(items[limit-1]))), nil
}
