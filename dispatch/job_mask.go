package dispatch

import (
	"maps"

	"github.com/hooklane/hooklane/destination/endpoint"
)

// Masked returns a copy of j for a reader who may not read its
// subscription (producer and worker keys: they get 403 on the subscription
// itself, so they must not read its custom headers or the credentials in
// its target through its jobs): its custom header values masked, its
// target URL reduced by endpoint.MaskTarget, and every URL inside its error
// messages (a failed send names its URL) masked the same way. The job
// itself is not changed.
func (j *Job) Masked() *Job {
	out := *j
	if j.Headers != nil {
		out.Headers = maps.Clone(j.Headers)
		for k := range out.Headers {
			out.Headers[k] = endpoint.Mask
		}
	}
	if j.TargetURL != "" {
		out.TargetURL = endpoint.MaskTarget(j.TargetURL)
	}
	if j.LastError != nil {
		e := endpoint.MaskTargetsInText(*j.LastError)
		out.LastError = &e
	}
	if j.Attempts != nil {
		out.Attempts = make([]Attempt, len(j.Attempts))
		for i, a := range j.Attempts {
			a.Error = endpoint.MaskTargetsInText(a.Error)
			out.Attempts[i] = a
		}
	}
	return &out
}
