package metrics

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Caps on the labels an administrator defines: each process labels at most
// this many distinct event types and pool codes, the first it sees; any
// further one is labelled OtherLabel. Types and pools are created through
// the admin API only, but nothing else bounds how many exist, and each
// distinct value is a series per label combination in every scrape.
const (
	// TypeLabelMax is the most distinct event type labels per process.
	TypeLabelMax = 1000
	// PoolLabelMax is the most distinct pool labels per process.
	PoolLabelMax = 200
	// DestinationLabelMax is the most distinct destination labels per
	// process: webhook and the registered destination types (five today).
	DestinationLabelMax = 16
)

// DestinationWebhook is the destination label of an HTTP target.
const DestinationWebhook = "webhook"

// DestinationRabbitMQ is the destination label of a RabbitMQ destination,
// whose targetUrl's scheme is amqp (API.md §15: "amqp://host:port/exchange"),
// not its type's name.
const DestinationRabbitMQ = "rabbitmq"

// destinationLabel is the destination label of a job's target URL: the
// destination type (API.md §15) — "webhook" for http and https,
// "rabbitmq" for amqp and amqps, else the scheme, which is the type's name
// ("kafka://broker/topic"), within DestinationLabelMax; "other" past it or
// for a target that does not parse.
func (m *Metrics) destinationLabel(target string) string {
	scheme, _, ok := strings.Cut(target, "://")
	scheme = strings.ToLower(scheme)
	switch {
	case !ok || scheme == "":
		return OtherLabel
	case scheme == "http" || scheme == "https":
		return DestinationWebhook
	case scheme == "amqp" || scheme == "amqps":
		scheme = DestinationRabbitMQ
	}
	return m.destinationLabels.label(scheme)
}

// OtherLabel is the value of a label whose real value is outside its closed
// set (an unknown HTTP method, a type or pool past its cap).
const OtherLabel = "other"

// MethodLabel is the method label of an HTTP request: one of the methods of
// RFC 9110 and PATCH, else OtherLabel (a client may send any token as a
// method).
func MethodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return method
	}
	return OtherLabel
}

// CodeLabel is the code label of an HTTP answer: the code when net/http
// knows it (a closed set of about 60), else its class ("1xx" to "5xx"), or
// "none" outside 100–599.
func CodeLabel(code int) string {
	if http.StatusText(code) != "" {
		return strconv.Itoa(code)
	}
	return StatusClass(code)
}

// labelSet admits at most max distinct values of one label; further values
// map to OtherLabel. Safe for concurrent use.
type labelSet struct {
	mu   sync.Mutex
	max  int
	seen map[string]struct{}
}

func newLabelSet(maxValues int) *labelSet {
	return &labelSet{max: maxValues, seen: make(map[string]struct{})}
}

// label returns v when it is already admitted or there is room to admit it,
// else OtherLabel.
func (s *labelSet) label(v string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.seen[v]; ok {
		return v
	}
	if len(s.seen) >= s.max {
		return OtherLabel
	}
	s.seen[v] = struct{}{}
	return v
}
