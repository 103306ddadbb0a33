package dispatch

import (
	"encoding/json"
	"strconv"

	"github.com/hooklane/hooklane/event/cloudevent"
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
//
// It is written by hand: a job's attempts are encoded on every write of
// the job, and a shadow struct through json.Marshal encoded each twice.
// The keys come in the order the shadow struct gave them (startedAt
// last), and each value exactly as json.Marshal writes it.
func (a Attempt) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 160+len(a.Error)+len(a.ResponseBody))
	b = append(b, `{"attempt":`...)
	b = strconv.AppendInt(b, int64(a.Attempt), 10)
	b = appendStringField(b, "action", a.Action)
	b = append(b, `,"durationMs":`...)
	b = strconv.AppendInt(b, a.DurationMs, 10)
	if a.StatusCode != 0 {
		b = append(b, `,"statusCode":`...)
		b = strconv.AppendInt(b, int64(a.StatusCode), 10)
	}
	b = appendStringField(b, "error", a.Error)
	b = appendStringField(b, "responseBody", a.ResponseBody)
	b = appendStringField(b, "worker", a.Worker)
	b = append(b, `,"startedAt":"`...)
	b = cloudevent.AppendTime(b, a.StartedAt)
	return append(b, `"}`...), nil
}

// appendStringField appends `,"name":value` when value is not empty (a
// field tagged omitempty).
func appendStringField(b []byte, name, value string) []byte {
	if value == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return cloudevent.AppendJSONString(b, value)
}
