package api

import (
	"maps"
	"net/url"
	"regexp"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/stream"
)

// masked replaces a value the caller may not read.
const masked = "***"

// jobForCaller renders a job for the caller of the request: in full for a
// caller that may read subscriptions (GET /api/subscriptions/{id}: admin
// and viewer keys, and everyone when auth is off), else with what may be a
// receiver's credential masked, as maskedJob does. Producer and worker keys,
// which get 403 on the subscription itself, must not read its custom
// headers or the credentials in its target through its jobs. TASK jobs are
// masked alike: any producer may read them, not only the one that posted.
// Every answer that carries a job goes through here.
func jobForCaller(c *gin.Context, j *dispatch.Job) *dispatch.Job {
	if j == nil || mayReadSubscriptions(c) {
		return j
	}
	return maskedJob(j)
}

// jobsForCaller is jobForCaller for a list.
func jobsForCaller(c *gin.Context, jobs []*dispatch.Job) []*dispatch.Job {
	if mayReadSubscriptions(c) {
		return jobs
	}
	out := make([]*dispatch.Job, len(jobs))
	for i, j := range jobs {
		out[i] = maskedJob(j)
	}
	return out
}

// mayReadSubscriptions reports whether the caller's role may read
// subscriptions (the roles of GET /api/subscriptions/{id} in Server.routes).
// The role is unset only when auth is off: the caller is then admin.
func mayReadSubscriptions(c *gin.Context) bool {
	role := Role(c.GetString(ctxKeyRole))
	return role == "" || role == RoleAdmin || role == RoleViewer
}

// maskedJob returns a copy of j with its custom header values masked, its
// target URL reduced by maskURL, and every URL inside its error messages
// (a failed send names its URL) masked the same way. The job itself is not
// changed.
func maskedJob(j *dispatch.Job) *dispatch.Job {
	out := *j
	if j.Headers != nil {
		out.Headers = maps.Clone(j.Headers)
		for k := range out.Headers {
			out.Headers[k] = masked
		}
	}
	if j.TargetURL != "" {
		out.TargetURL = maskURL(j.TargetURL)
	}
	if j.LastError != nil {
		e := maskURLsInText(*j.LastError)
		out.LastError = &e
	}
	if j.Attempts != nil {
		out.Attempts = make([]dispatch.Attempt, len(j.Attempts))
		for i, a := range j.Attempts {
			a.Error = maskURLsInText(a.Error)
			out.Attempts[i] = a
		}
	}
	return &out
}

// maskURL keeps what says where a delivery goes — scheme, host and port —
// and masks every part that may carry a receiver's credential: the
// userinfo (https://user:pass@ or https://token@), the path (Slack, Discord
// and many other receivers put their token there), the query and the
// fragment. "https://u:p@hooks.example.com/T0/B0/secret?sig=x" becomes
// "https://***@hooks.example.com/***". A value that does not parse as a URL
// with a host is masked whole.
func maskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return masked
	}
	var b strings.Builder
	b.WriteString(u.Scheme + "://")
	if u.User != nil {
		b.WriteString(masked + "@")
	}
	b.WriteString(u.Host)
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		b.WriteString("/" + masked)
	}
	return b.String()
}

// urlInText finds the URLs in a message such as Go's "Post
// \"https://…\": dial tcp …": a scheme, then everything up to a space, a
// quote or an angle bracket.
var urlInText = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^\s"'<>]+`)

// maskURLsInText masks, as maskURL does, every URL inside a free-text
// message (a delivery error that names its target). Text without a URL is
// returned as is.
func maskURLsInText(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlInText.ReplaceAllStringFunc(s, maskURL)
}

// maskedStatusEvent returns e with the URLs in its error message masked.
// Status events go to every stream client and into every job's history, so
// they are masked for every role.
func maskedStatusEvent(e *stream.Event) *stream.Event {
	if !strings.Contains(e.Data.Error, "://") {
		return e
	}
	out := *e
	out.Data.Error = maskURLsInText(e.Data.Error)
	return &out
}
