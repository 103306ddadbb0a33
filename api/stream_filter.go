package api

import (
	"slices"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
)

// streamFilter is the server-side filter of API.md §7. Empty lists do not
// filter; the lists of one filter are ANDed, the values of one list ORed.
type streamFilter struct {
	types         []string
	subscriptions []string
	eventTypes    []string
	jobs          []string
	// clients lists client ids (API.md §11); applied per connection by
	// streamClients, not in match (it needs lookups).
	clients []string
	// since drops events older than it, live ones included; zero when a
	// Last-Event-ID is given (it wins).
	since time.Time
}

// streamFilterValues are the raw filter parameters, as query values or the
// WebSocket filters object.
type streamFilterValues struct {
	Types         string `json:"types"`
	Subscriptions string `json:"subscriptions"`
	EventTypes    string `json:"eventTypes"`
	Jobs          string `json:"jobs"`
	Clients       string `json:"clients"`
	Since         string `json:"since"`
}

func splitList(v string) []string {
	var out []string
	for p := range strings.SplitSeq(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parse validates the values into a filter and a cursor (Since only; the
// caller adds the last event id).
func (v *streamFilterValues) parse() (*streamFilter, stream.Cursor, error) {
	f := &streamFilter{
		types: splitList(v.Types), subscriptions: splitList(v.Subscriptions),
		eventTypes: splitList(v.EventTypes), jobs: splitList(v.Jobs), clients: splitList(v.Clients),
	}
	var cur stream.Cursor
	if v.Since != "" {
		t, err := time.Parse(time.RFC3339Nano, v.Since)
		if err != nil {
			return nil, cur, unprocessable("since must be an RFC 3339 timestamp",
				FieldError{Pointer: "", Message: "query parameter since must be an RFC 3339 timestamp"})
		}
		cur.Since, f.since = t, t
	}
	return f, cur, nil
}

// match reports whether an event passes the filter.
func (f *streamFilter) match(e *stream.Event) bool {
	if !f.since.IsZero() && e.Time.Before(f.since) {
		return false
	}
	accepted := e.Type == stream.TypeEventAccepted
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
		return subscription.MatchPattern(p, e.Data.EventType)
	}) {
		return false
	}
	if len(f.jobs) > 0 && (accepted || !slices.Contains(f.jobs, e.Subject)) {
		return false
	}
	return true
}

// lastEventID reads a resume id; it must be a ULID, the only ids the
// stream sends.
func lastEventID(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	if _, err := ulid.ParseStrict(v); err != nil {
		return "", unprocessable("Last-Event-ID must be an event id (ULID) received from the stream")
	}
	return v, nil
}
