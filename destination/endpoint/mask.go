package endpoint

import (
	"net/url"
	"regexp"
	"strings"
)

// MaskTarget is the one function that reduces a job's or a subscription's
// target URL to what may leave the store for a reader who may not read the
// subscription (job views of producer and worker keys, status events on the
// stream, operational hooklane.* events, logs, health): it keeps what says
// where a delivery goes — scheme, host and port — and masks every part
// that may carry a receiver's credential: the userinfo (https://user:pass@
// or https://token@) becomes "***@", and the path (Slack, Discord and many
// other receivers put their token there), the query and the fragment
// together become "/***". "https://u:p@hooks.example.com/T0/B0/secret?sig=x"
// becomes "https://***@hooks.example.com/***". A value that does not parse
// as a URL with a host is masked whole.
func MaskTarget(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return Mask
	}
	var b strings.Builder
	b.WriteString(u.Scheme + "://")
	if u.User != nil {
		b.WriteString(Mask + "@")
	}
	b.WriteString(u.Host)
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		b.WriteString("/" + Mask)
	}
	return b.String()
}

// urlInText finds the URLs in a message such as Go's "Post
// \"https://…\": dial tcp …": a scheme, then everything up to a space, a
// quote or an angle bracket.
var urlInText = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^\s"'<>]+`)

// MaskTargetsInText masks, as MaskTarget does, every URL inside a free-text
// message (a delivery error names its target: a job's lastError, an
// attempt's error, a circuit's reason). Text without a URL is returned as
// is.
func MaskTargetsInText(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlInText.ReplaceAllStringFunc(s, MaskTarget)
}
