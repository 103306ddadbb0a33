package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/event/cloudevent"
)

// List page sizes (API.md conventions).
const (
	limitDefault = 50
	limitMax     = 500
)

// Bounds of a list's query filters: every filter is a store predicate, so
// their number and size are bounded before any reaches the store (a
// thousand ext.* filters once nested past SQLite's expression depth: 500).
const (
	// QueryValueMaxBytes bounds the name and each value of every query
	// parameter of a list route.
	QueryValueMaxBytes = 1024
	// ExtFiltersMax bounds the ext.* filters of GET /api/events.
	ExtFiltersMax = 20
)

// queryBounds refuses, with a 422 naming the query parameter (no pointer:
// the body is not involved), a list request whose query has a parameter
// name or value longer than QueryValueMaxBytes.
func queryBounds(c *gin.Context) error {
	for k, vs := range c.Request.URL.Query() {
		if len(k) > QueryValueMaxBytes {
			return unprocessable("a query parameter name is too long", FieldError{
				Pointer: "", Message: fmt.Sprintf("query parameter %s… has a name longer than %d bytes", k[:32], QueryValueMaxBytes),
			})
		}
		for _, v := range vs {
			if len(v) > QueryValueMaxBytes {
				return unprocessable("query parameter "+k+" is too long", FieldError{
					Pointer: "", Message: fmt.Sprintf("query parameter %s must be at most %d bytes", k, QueryValueMaxBytes),
				})
			}
		}
	}
	return nil
}

// listParams checks the query's bounds (queryBounds), reads ?limit=
// (clamped to 1..500) and ?cursor=, a cursor
// writePage gave for this list's route, and returns the key it holds (the
// store's cursor, or the sort key of a list cut here); a cursor the list did
// not give is a 422 (decodeCursor).
func listParams(c *gin.Context) (limit int, cursor string, err error) {
	if err := queryBounds(c); err != nil {
		return 0, "", err
	}
	limit = limitDefault
	if v := c.Query("limit"); v != "" {
		n, ok := parseCount(v, limitMax)
		if !ok || n < 1 {
			return 0, "", unprocessable("limit must be a positive integer", FieldError{Pointer: "", Message: "query parameter limit must be a positive integer"})
		}
		limit = n
	}
	if v := c.Query("cursor"); v != "" {
		if cursor, err = decodeCursor(c.FullPath(), v); err != nil {
			return 0, "", err
		}
	}
	return limit, cursor, nil
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

// writePage answers a list page; next is the key the next page starts
// after ("" on the last page), given to the client as an opaque cursor of
// this route (encodeCursor).
func writePage[T any](c *gin.Context, items []T, next string) {
	if items == nil {
		items = []T{}
	}
	p := page[T]{Items: items}
	if next != "" {
		cur := encodeCursor(c.FullPath(), next)
		p.NextCursor = &cur
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
func pageDesc[T any](items []T, key func(T) string, limit int, after string) ([]T, string) {
	return pageSorted(items, key, true, limit, after)
}

// pageSorted pages a list the store returns whole: it orders items by key
// (descending when desc), keeps those after the key after (from
// listParams; "" for the first page) and at most limit of them. It returns
// the page and the key the next page starts after ("" when none), which
// writePage turns into the cursor.
func pageSorted[T any](items []T, key func(T) string, desc bool, limit int, after string) ([]T, string) {
	order := func(a, b T) int { return strings.Compare(key(a), key(b)) }
	if desc {
		order = func(a, b T) int { return strings.Compare(key(b), key(a)) }
	}
	slices.SortStableFunc(items, order)
	if after != "" {
		i := 0
		for i < len(items) && (desc && key(items[i]) >= after || !desc && key(items[i]) <= after) {
			i++
		}
		items = items[i:]
	}
	if len(items) <= limit {
		return items, ""
	}
	items = items[:limit]
	return items, key(items[limit-1])
}
