package cloudevent

import (
	"time"
)

// Timestamp is a time that encodes to JSON as the gateway writes every
// timestamp (see FormatTime). Domain types use it in their MarshalJSON to
// shadow their time.Time fields.
type Timestamp time.Time

// MarshalJSON renders the time as "2006-01-02T15:04:05.000Z".
func (t Timestamp) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 26)
	b = append(b, '"')
	b = AppendTime(b, time.Time(t))
	return append(b, '"'), nil
}

// TimestampPtr converts an optional time; nil stays nil (JSON null).
func TimestampPtr(t *time.Time) *Timestamp {
	if t == nil {
		return nil
	}
	ts := Timestamp(*t)
	return &ts
}
