package transform

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

// maxErrorBytes bounds the text of a compile or run error: a script that
// throws an object with a 10 MB message must not put 10 MB into a job's
// lastError.
const maxErrorBytes = 1024

// Input is what the handler receives as its webhook argument (API.md §16).
type Input struct {
	// Method is the request method, POST unless the subscription says
	// otherwise.
	Method string
	// URL is the target; empty for a destination (§15), and then absent from
	// the handler's argument.
	URL string
	// Headers are the subscription's custom headers, names lower-case.
	Headers map[string]string
	// Payload is the body as JSON: the structured CloudEvent, or its data
	// alone with dataOnly.
	Payload json.RawMessage
	// EventType is the event's type.
	EventType string
	// EventID is the stored event's id (§5).
	EventID string
	// Attempt is the attempt's number, from 1.
	Attempt int
	// Cancel is the input's cancel flag, false on every delivery.
	Cancel bool
}

// Output is what the handler returned, validated: a member it left out holds
// the Input's value.
type Output struct {
	// Method is POST, PUT or PATCH.
	Method string
	// URL is an http or https URL, or empty when the Input had none. The
	// caller still runs its target checks (§3) and, for a subscription with
	// auth or tls, [SameOrigin].
	URL string
	// Headers is the complete set of custom headers to send, names
	// lower-case.
	Headers map[string]string
	// Payload is the payload as JSON (a JSON string when PayloadIsString).
	Payload json.RawMessage
	// PayloadChanged reports whether the handler changed the payload; when it
	// did not, the request's body and content type are §6's.
	PayloadChanged bool
	// PayloadIsString reports that the payload is a string: a changed string
	// payload is sent as it is, text/plain.
	PayloadIsString bool
	// Cancel reports that nothing is to be sent (the job ends CANCELLED).
	Cancel bool
}

// Body is the request body a changed payload becomes: a string's text as it
// is, anything else its JSON.
func (o *Output) Body() []byte {
	if o.PayloadIsString {
		var s string
		if err := json.Unmarshal(o.Payload, &s); err == nil {
			return []byte(s)
		}
	}
	return o.Payload
}

// ContentType is the content type of a changed payload: the content-type
// header the handler set, else text/plain for a string and application/json
// for anything else.
func (o *Output) ContentType() string {
	if ct, ok := o.Headers["content-type"]; ok {
		return ct
	}
	if o.PayloadIsString {
		return "text/plain; charset=utf-8"
	}
	return "application/json"
}

// Kind classifies a failed run. The set is small and fixed: the kinds are
// metric labels.
type Kind string

// The kinds of a failed run.
const (
	// KindThrow is an exception the handler threw (or a built-in threw for
	// it, such as a TypeError or a guarded built-in's RangeError).
	KindThrow Kind = "throw"
	// KindTimeout is a run that outlived its time limit or its ctx.
	KindTimeout Kind = "timeout"
	// KindInvalidResult is a result that breaks §16: not an object, an
	// invalid method, url or header, or a member of the wrong type.
	KindInvalidResult Kind = "invalid_result"
	// KindTooLarge is a result over the size limit.
	KindTooLarge Kind = "too_large"
	// KindMemory is a run stopped for allocating more than its memory bound.
	KindMemory Kind = "memory"
	// KindCompile is code that does not compile met at delivery: the API
	// refuses such code, so only a source stored before a stricter
	// [Compile] gets there. No RunError has it; the delivery path reports it.
	KindCompile Kind = "compile"
)

// Kinds lists every Kind, for a metric's label values.
func Kinds() []Kind {
	return []Kind{KindThrow, KindTimeout, KindInvalidResult, KindTooLarge, KindMemory, KindCompile}
}

// RunError is a failed run: at delivery a non-retryable failed attempt whose
// lastError carries Message, Line and Column (§16). Line and Column are
// 1-based positions in the source, 0 when unknown. Message is at most 1 KiB.
type RunError struct {
	Kind    Kind
	Message string
	Line    int
	Column  int
}

// Error formats the error with its kind and position.
func (e *RunError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("transformation %s at line %d, column %d: %s", e.Kind, e.Line, e.Column, e.Message)
	}
	return fmt.Sprintf("transformation %s: %s", e.Kind, e.Message)
}

func invalid(format string, args ...any) *RunError {
	return &RunError{Kind: KindInvalidResult, Message: truncate(fmt.Sprintf(format, args...), maxErrorBytes)}
}

// validMethod reports whether m is a method a transformation may choose.
func validMethod(m string) bool {
	return m == "POST" || m == "PUT" || m == "PATCH"
}

// checkURL checks a url the handler returned: absolute http or https with a
// host, user information only as the target has it, on the target's origin
// (SameOrigin). The target checks of §3 (private addresses and so on) are
// the caller's.
func checkURL(raw, target string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("url %q: must be http or https", truncate(raw, 200))
	}
	if u.Host == "" {
		return fmt.Errorf("url %q: has no host", truncate(raw, 200))
	}
	if u.User != nil && !SameOrigin(target, raw) {
		return fmt.Errorf("url %q: must not carry credentials", truncate(raw, 200))
	}
	return nil
}

// SameOrigin reports whether next differs from prev in its path and query
// only: the rule for a subscription with auth or tls (§14), whose credential
// never goes to another scheme, host or port. Both must be absolute URLs; a
// default port written out ("https://h:443") counts as the same port. User
// information in next must be prev's own (or none): a credential is never
// added, nor moved to another origin.
func SameOrigin(prev, next string) bool {
	p, err1 := url.Parse(prev)
	n, err2 := url.Parse(next)
	if err1 != nil || err2 != nil {
		return false
	}
	return strings.EqualFold(p.Scheme, n.Scheme) &&
		strings.EqualFold(p.Hostname(), n.Hostname()) &&
		effectivePort(p) == effectivePort(n) &&
		(n.User == nil || p.User != nil && n.User.String() == p.User.String())
}

func effectivePort(u *url.URL) string {
	if port := u.Port(); port != "" {
		return port
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// forbiddenHeader reports whether a transformation may not set the header
// (names lower-case): the Standard Webhooks and Hooklane headers (signature,
// delivery metadata), the CloudEvents binding, and the framing and
// hop-by-hop headers the HTTP client owns.
func forbiddenHeader(name string) bool {
	switch name {
	case "host", "content-length", "transfer-encoding", "connection", "keep-alive",
		"proxy-connection", "te", "trailer", "upgrade":
		return true
	}
	return strings.HasPrefix(name, "webhook-") || strings.HasPrefix(name, "hooklane-") || strings.HasPrefix(name, "ce-")
}

// checkHeaderName checks a header name is an RFC 9110 token.
func checkHeaderName(name string) error {
	if name == "" {
		return errors.New("header name is empty")
	}
	for i := range len(name) {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return fmt.Errorf("header name %q is not a token", truncate(name, 100))
	}
	return nil
}

// checkHeaderValue refuses what an HTTP request cannot carry: control
// characters (tab aside) and invalid UTF-8.
func checkHeaderValue(name, v string) error {
	for i := range len(v) {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return fmt.Errorf("header %q: value has a control character", name)
		}
	}
	if !utf8.ValidString(v) {
		return fmt.Errorf("header %q: value is not valid UTF-8", name)
	}
	return nil
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
