package stream

import (
	"slices"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/hooklane/hooklane/event"
)

// FilterValues are a stream's raw filter parameters (API.md §7): the query
// parameters of GET /api/stream, each list's values joined by commas, or
// the filters object of a WebSocket subscribe message.
type FilterValues struct {
	Types         string `json:"types"`
	Subscriptions string `json:"subscriptions"`
	EventTypes    string `json:"eventTypes"`
	Jobs          string `json:"jobs"`
	Clients       string `json:"clients"`
	Since         string `json:"since"`
}

// FilterError is a filter parameter or resume id that cannot be read.
type FilterError struct {
	// Param names the query parameter at fault ("" for the resume id).
	Param string
	// Detail says what is wrong, for a person.
	Detail string
}

// Error returns the detail.
func (e *FilterError) Error() string { return e.Detail }

// Filter is the server-side filter of API.md §7. Empty lists do not
// filter; the lists of one filter are ANDed, the values of one list ORed.
// The clients list (API.md §11) is not applied by Match: telling a
// message's client needs lookups, which the connection makes.
type Filter struct {
	types         []string
	subscriptions []string
	eventTypes    []string
	jobs          []string
	clients       []string
	// since drops events older than it, live ones included; zero when a
	// resume id is given (it wins).
	since time.Time
}

// NewFilter reads v and the resume id lastEventID ("" for none) into a
// filter and the cursor its replay starts from. A resume id wins over
// since. Errors are *FilterError.
func NewFilter(v *FilterValues, lastEventID string) (*Filter, Cursor, error) {
	f := &Filter{
		types: splitList(v.Types), subscriptions: splitList(v.Subscriptions),
		eventTypes: splitList(v.EventTypes), jobs: splitList(v.Jobs), clients: splitList(v.Clients),
	}
	var cur Cursor
	if v.Since != "" {
		t, err := time.Parse(time.RFC3339Nano, v.Since)
		if err != nil {
			return nil, cur, &FilterError{Param: "since", Detail: "since must be an RFC 3339 timestamp"}
		}
		cur.Since, f.since = t, t
	}
	if lastEventID != "" {
		// The stream sends ULIDs only.
		if _, err := ulid.ParseStrict(lastEventID); err != nil {
			return nil, cur, &FilterError{Detail: "Last-Event-ID must be an event id (ULID) received from the stream"}
		}
		cur.AfterID, f.since = lastEventID, time.Time{}
	}
	return f, cur, nil
}

// Clients returns the client ids the filter lists (none: any client).
func (f *Filter) Clients() []string { return f.clients }

// ScopeTo narrows the filter to one client, for a caller scoped to it.
// other is a listed client that is not it (the caller may not read it),
// and ok false then.
func (f *Filter) ScopeTo(client string) (other string, ok bool) {
	for _, c := range f.clients {
		if c != client {
			return c, false
		}
	}
	f.clients = []string{client}
	return "", true
}

// Match reports whether an event passes the filter (its clients list
// aside).
func (f *Filter) Match(e *Event) bool {
	if !f.since.IsZero() && e.Time.Before(f.since) {
		return false
	}
	accepted := e.Type == TypeEventAccepted
	if len(f.types) > 0 && !slices.ContainsFunc(f.types, func(t string) bool {
		if p, ok := strings.CutSuffix(t, "*"); ok {
			return strings.HasPrefix(e.Type, p)
		}
		return t == e.Type
	}) {
		return false
	}
	if len(f.subscriptions) > 0 {
		if accepted {
			if !slices.ContainsFunc(e.Data.Subscriptions, func(s string) bool { return slices.Contains(f.subscriptions, s) }) {
				return false
			}
		} else if !slices.Contains(f.subscriptions, e.Data.Subscription) {
			return false
		}
	}
	if len(f.eventTypes) > 0 && !slices.ContainsFunc(f.eventTypes, func(p string) bool {
		return event.MatchTypePattern(p, e.Data.EventType)
	}) {
		return false
	}
	if len(f.jobs) > 0 && (accepted || !slices.Contains(f.jobs, e.Subject)) {
		return false
	}
	return true
}

// splitList splits a comma-separated list, dropping empty values.
func splitList(v string) []string {
	var out []string
	for p := range strings.SplitSeq(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
