package api

import (
	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/dispatch"
)

// jobForCaller renders a job for the caller of the request: in full for a
// caller that may read subscriptions (GET /api/subscriptions/{id}: admin
// and viewer keys, and everyone when auth is off), else with what may be a
// receiver's credential masked (dispatch.Job.Masked). Producer and worker keys,
// which get 403 on the subscription itself, must not read its custom
// headers or the credentials in its target through its jobs. TASK jobs are
// masked alike: any producer may read them, not only the one that posted.
// Every answer that carries a job goes through here.
func jobForCaller(c *gin.Context, j *dispatch.Job) *dispatch.Job {
	if j == nil || mayReadSubscriptions(c) {
		return j
	}
	return j.Masked()
}

// jobsForCaller is jobForCaller for a list.
func jobsForCaller(c *gin.Context, jobs []*dispatch.Job) []*dispatch.Job {
	if mayReadSubscriptions(c) {
		return jobs
	}
	out := make([]*dispatch.Job, len(jobs))
	for i, j := range jobs {
		out[i] = j.Masked()
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
