package subscription

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
)

// Subscription defaults and limits (API.md §3).
const (
	// SequenceDefault is the sequence of a subscription that names none.
	SequenceDefault = 99
	// DelaySecondsDefault is the delay before a new job is queued.
	DelaySecondsDefault = 0
	// CodeMaxLength is the longest subscription code.
	CodeMaxLength = 128
	// TargetMaxLength is the longest target URL.
	TargetMaxLength = 2048
	// MaxAttemptsMax caps retry.maxAttempts; more is an operator mistake.
	MaxAttemptsMax = 1000
)

// FieldError is one problem with a subscription as a request body: Pointer
// is an RFC 6901 JSON pointer into that body (`/filters/1/op`), Message says
// what is wrong, for a person. The API layer answers a non-empty list with a
// 422 problem+json whose errors[] are these.
type FieldError struct {
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

// Error returns "pointer: message".
func (e FieldError) Error() string { return e.Pointer + ": " + e.Message }

// specVersionRe is MAJOR.MINOR, as schema versions are written.
var specVersionRe = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

// codeRe is a subscription code: letters, digits and -_.: only.
var codeRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]*$`)

// ApplyDefaults sets every zero field that has a default (API.md §3): mode
// IMMEDIATE, delivery push, timeoutSeconds 30, maxAgeSeconds 86400, sequence
// 99, retry {8, 5, 3600} field by field, status ACTIVE. delaySeconds (0) and
// dataOnly (false) default to their zero values.
//
// Zero means "not given", so ApplyDefaults cannot tell an explicit
// `"sequence": 0` from an absent one. To honour explicit zeros, call it on
// an empty Subscription and then json.Unmarshal the request body onto it:
// members absent from the body keep their defaults, and Validate then
// refuses out-of-range explicit values.
func (s *Subscription) ApplyDefaults() {
	if s.Mode == "" {
		s.Mode = dispatch.ModeImmediate
	}
	if s.Delivery == "" {
		s.Delivery = dispatch.DeliveryPush
	}
	if s.TimeoutSeconds == 0 {
		s.TimeoutSeconds = dispatch.TimeoutSecondsDefault
	}
	if s.MaxAgeSeconds == 0 {
		s.MaxAgeSeconds = dispatch.MaxAgeSecondsDefault
	}
	if s.Sequence == 0 {
		s.Sequence = SequenceDefault
	}
	s.Retry = s.Retry.WithDefaults()
	if s.Status == "" {
		s.Status = StatusActive
	}
}

// Validate checks a subscription as the API receives it, after
// ApplyDefaults, and returns every problem found (nil when it is valid),
// in the order of the request's members. It checks the code, bindings
// (patterns by [ValidatePattern], specVersion as MAJOR.MINOR), filters (the
// same compilation the index uses), target URL syntax (http or https with a
// host; required for push delivery; the private-address check is not done
// here), headers (valid names and values; none of the headers the gateway
// sets itself: Content-Type, Content-Length, Host, webhook-*, hooklane-*,
// ce-*; their number and size, see HeadersBytesMax), mode, delivery, timeouts, retry policy, status, custom
// configuration, and auth and tls (see validateEndpoint).
func (s *Subscription) Validate() []FieldError {
	var errs []FieldError
	add := func(ptr, msg string) { errs = append(errs, FieldError{Pointer: ptr, Message: msg}) }

	switch {
	case s.Code == "":
		add("/code", "is required")
	case len(s.Code) > CodeMaxLength:
		add("/code", fmt.Sprintf("must be at most %d characters", CodeMaxLength))
	case !codeRe.MatchString(s.Code):
		add("/code", "must be letters, digits, '-', '_', '.' and ':', starting with a letter or digit")
	}

	if len(s.EventTypes) == 0 {
		add("/eventTypes", "must bind at least one event type")
	}
	for i, b := range s.EventTypes {
		ptr := "/eventTypes/" + strconv.Itoa(i)
		if err := event.ValidateTypePattern(b.EventTypeCode); err != nil {
			add(ptr+"/eventTypeCode", err.Error())
		}
		if b.SpecVersion != "" && !specVersionRe.MatchString(b.SpecVersion) {
			add(ptr+"/specVersion", "must be MAJOR.MINOR, e.g. 1.1")
		}
	}

	for i, f := range s.Filters {
		if _, err := compileFilter(f); err != nil {
			if fe, ok := errors.AsType[*filterError](err); ok {
				add("/filters/"+strconv.Itoa(i)+"/"+fe.part, fe.msg)
			}
		}
	}

	switch {
	case s.HasDestination():
		errs = append(errs, s.validateDestinationShape()...) // destination.go
	case s.Target != "" || s.Delivery != dispatch.DeliveryPull:
		if err := ValidateTargetURL(s.Target); err != nil {
			add("/target", err.Error())
		}
		if s.Target == "" {
			add("/destination", "a push subscription needs a target or a destination")
		}
	}
	headerErrs, eachHeader := s.validateHeaderBounds() // limits_endpoint.go
	errs = append(errs, headerErrs...)
	for _, name := range slices.Sorted(maps.Keys(s.Headers)) {
		if !eachHeader {
			break
		}
		ptr := "/headers/" + escapePointer(name)
		if err := cloudevent.CheckHeaderName(name); err != nil {
			add(ptr, err.Error())
		} else if reservedHeader(name) {
			add(ptr, "is set by the gateway and cannot be overridden")
		} else if err := cloudevent.CheckHeaderValue(s.Headers[name]); err != nil {
			// Refused here, not at delivery: a value the HTTP client
			// cannot send fails every attempt, and in BLOCK_ON_ERROR
			// holds the whole message group.
			add(ptr, err.Error())
		}
	}

	if !s.Mode.Valid() {
		add("/mode", "must be IMMEDIATE, NEXT_ON_ERROR or BLOCK_ON_ERROR")
	}
	if s.Delivery != dispatch.DeliveryPush && s.Delivery != dispatch.DeliveryPull {
		add("/delivery", "must be push or pull")
	}
	if s.TimeoutSeconds < 1 || s.TimeoutSeconds > dispatch.TimeoutSecondsMax {
		add("/timeoutSeconds", fmt.Sprintf("must be between 1 and %d", dispatch.TimeoutSecondsMax))
	}
	if s.MaxAgeSeconds < 1 {
		add("/maxAgeSeconds", "must be at least 1")
	}
	if s.DelaySeconds < 0 {
		add("/delaySeconds", "must not be negative")
	}
	if s.Retry.MaxAttempts < 1 || s.Retry.MaxAttempts > MaxAttemptsMax {
		add("/retry/maxAttempts", fmt.Sprintf("must be between 1 and %d", MaxAttemptsMax))
	}
	if s.Retry.InitialBackoffSeconds < 1 {
		add("/retry/initialBackoffSeconds", "must be at least 1")
	}
	if s.Retry.MaxBackoffSeconds < max(1, s.Retry.InitialBackoffSeconds) {
		add("/retry/maxBackoffSeconds", "must be at least 1 and at least initialBackoffSeconds")
	}
	if s.Status != StatusActive && s.Status != StatusPaused {
		add("/status", "must be ACTIVE or PAUSED")
	}
	for i, kv := range s.CustomConfig {
		if kv.Key == "" {
			add("/customConfig/"+strconv.Itoa(i)+"/key", "is required")
		}
	}
	errs = append(errs, s.validateEndpoint()...)       // auth and tls: validate_endpoint.go
	return append(errs, s.validateTransformation()...) // transformation.go
}

// ValidateTargetURL checks the syntax of a webhook target: an absolute
// http or https URL with a host, at most TargetMaxLength long. Whether the
// host is a public address is checked elsewhere (at create and at delivery).
func ValidateTargetURL(target string) error {
	if target == "" {
		return errors.New("is required")
	}
	if len(target) > TargetMaxLength {
		return fmt.Errorf("must be at most %d characters", TargetMaxLength)
	}
	u, err := url.Parse(target)
	if err != nil {
		return errors.New("must be a valid URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("must be an http or https URL")
	}
	if u.Hostname() == "" {
		return errors.New("must have a host")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return errors.New("must have a port between 1 and 65535")
		}
	}
	return nil
}

// reservedHeader reports whether the gateway sets the header on every
// delivery (API.md §6), so a subscription may not: overriding them would
// break signatures, framing or the CloudEvents binding.
func reservedHeader(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "content-type", "content-length", "host", "transfer-encoding", "connection":
		return true
	}
	return strings.HasPrefix(n, "webhook-") || strings.HasPrefix(n, "hooklane-") || strings.HasPrefix(n, "ce-")
}

// escapePointer escapes one JSON pointer reference token (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
