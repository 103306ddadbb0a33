package api

import (
	"maps"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/stream"
)

// masked replaces a value the caller may not read.
const masked = dispatch.Masked

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
// target URL reduced by dispatch.MaskTarget, and every URL inside its error messages
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
		out.TargetURL = dispatch.MaskTarget(j.TargetURL)
	}
	if j.LastError != nil {
		e := dispatch.MaskTargetsInText(*j.LastError)
		out.LastError = &e
	}
	if j.Attempts != nil {
		out.Attempts = make([]dispatch.Attempt, len(j.Attempts))
		for i, a := range j.Attempts {
			a.Error = dispatch.MaskTargetsInText(a.Error)
			out.Attempts[i] = a
		}
	}
	return &out
}

// maskedStatusEvent returns e with the URLs in its error message and its
// reason (a circuit's reason names the last failure) masked by
// dispatch.MaskTargetsInText. Status events go to every stream client and
// into every job's history, so they are masked for every role.
func maskedStatusEvent(e *stream.Event) *stream.Event {
	if !strings.Contains(e.Data.Error, "://") && !strings.Contains(e.Data.Reason, "://") {
		return e
	}
	out := *e
	out.Data.Error = dispatch.MaskTargetsInText(e.Data.Error)
	out.Data.Reason = dispatch.MaskTargetsInText(e.Data.Reason)
	return &out
}
