package dispatch

import (
	"encoding/json"

	"github.com/hooklane/hooklane/cloudevent"
)

// MarshalJSON renders the job in the API's form, timestamps in the gateway's
// format, the payload as raw JSON and the write-only secrets of auth and
// tls as "***".
func (j Job) MarshalJSON() ([]byte, error) {
	type plain Job
	p := plain(j)
	p.Auth, p.TLS = j.Auth.Masked(), j.TLS.Masked()
	attempts := j.Attempts
	if attempts == nil {
		attempts = []Attempt{}
	}
	var payload json.RawMessage
	if len(j.Payload) > 0 {
		payload = j.Payload
	}
	return json.Marshal(struct { //nolint:wrapcheck // plain data
		plain
		Payload        json.RawMessage       `json:"payload,omitempty"`
		NextAttemptAt  *cloudevent.Timestamp `json:"nextAttemptAt"`
		LeaseExpiresAt *cloudevent.Timestamp `json:"leaseExpiresAt,omitempty"`
		Attempts       []Attempt             `json:"attempts"`
		CreatedAt      cloudevent.Timestamp  `json:"createdAt"`
		UpdatedAt      cloudevent.Timestamp  `json:"updatedAt"`
		CompletedAt    *cloudevent.Timestamp `json:"completedAt"`
		// TraceParent, nil, hides the stored field of the same name: the
		// API does not show it.
		TraceParent *struct{} `json:"traceParent,omitempty"`
	}{
		plain:          p,
		Payload:        payload,
		NextAttemptAt:  cloudevent.TimestampPtr(j.NextAttemptAt),
		LeaseExpiresAt: cloudevent.TimestampPtr(j.LeaseExpiresAt),
		Attempts:       attempts,
		CreatedAt:      cloudevent.Timestamp(j.CreatedAt),
		UpdatedAt:      cloudevent.Timestamp(j.UpdatedAt),
		CompletedAt:    cloudevent.TimestampPtr(j.CompletedAt),
	})
}

// UnmarshalJSON reads the form MarshalJSON writes (the payload as raw JSON).
func (j *Job) UnmarshalJSON(b []byte) error {
	type plain Job
	var aux struct {
		*plain
		Payload json.RawMessage `json:"payload,omitempty"`
	}
	aux.plain = (*plain)(j)
	if err := json.Unmarshal(b, &aux); err != nil {
		return err //nolint:wrapcheck // the JSON error is the message
	}
	if len(aux.Payload) > 0 {
		j.Payload = []byte(aux.Payload)
	} else {
		j.Payload = nil
	}
	return nil
}

// MarshalJSON renders the attempt with its start time in the gateway's
// format.
func (a Attempt) MarshalJSON() ([]byte, error) {
	type plain Attempt
	return json.Marshal(struct { //nolint:wrapcheck // plain data
		plain
		StartedAt cloudevent.Timestamp `json:"startedAt"`
	}{plain: plain(a), StartedAt: cloudevent.Timestamp(a.StartedAt)})
}

// MarshalJSON renders the pool with timestamps in the gateway's format.
func (p Pool) MarshalJSON() ([]byte, error) {
	type plain Pool
	return json.Marshal(struct { //nolint:wrapcheck // plain data
		plain
		CreatedAt cloudevent.Timestamp `json:"createdAt"`
		UpdatedAt cloudevent.Timestamp `json:"updatedAt"`
	}{plain: plain(p), CreatedAt: cloudevent.Timestamp(p.CreatedAt), UpdatedAt: cloudevent.Timestamp(p.UpdatedAt)})
}
