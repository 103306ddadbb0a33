package mongostore

import (
	"time"

	"github.com/hooklane/hooklane/dispatch"
)

// jobDoc is a dispatch.Job as stored. Secret and Version, which the API never
// shows, are stored like every other field; orderKey is stored so that group
// and due queries can sort on it.
type jobDoc struct {
	ID             string        `bson:"_id"`
	Kind           string        `bson:"kind"`
	Code           string        `bson:"code"`
	Subject        string        `bson:"subject"`
	EventID        string        `bson:"eventId"`
	SubscriptionID string        `bson:"subscriptionId"`
	Subscription   string        `bson:"subscription"`
	CorrelationID  string        `bson:"correlationId"`
	TargetURL      string        `bson:"targetUrl"`
	Mode           string        `bson:"mode"`
	Delivery       string        `bson:"delivery"`
	MessageGroup   string        `bson:"messageGroup"`
	OrderKey       string        `bson:"orderKey"`
	DispatchPoolID string        `bson:"dispatchPoolId"`
	Headers        []keyValueDoc `bson:"headers"`
	TimeoutSeconds int           `bson:"timeoutSeconds"`
	MaxAgeSeconds  int           `bson:"maxAgeSeconds"`
	DataOnly       bool          `bson:"dataOnly"`
	Retry          retryDoc      `bson:"retry"`
	Payload        []byte        `bson:"payload"`
	Secret         string        `bson:"secret"`
	Auth           *authDoc      `bson:"auth,omitempty"`
	TLS            *tlsDoc       `bson:"tls,omitempty"`

	Status         string       `bson:"status"`
	AttemptCount   int          `bson:"attemptCount"`
	MaxAttempts    int          `bson:"maxAttempts"`
	NextAttemptAt  *time.Time   `bson:"nextAttemptAt"`
	LastError      *string      `bson:"lastError"`
	BlockedBy      string       `bson:"blockedBy"`
	Worker         string       `bson:"worker"`
	LeaseExpiresAt *time.Time   `bson:"leaseExpiresAt"`
	Attempts       []attemptDoc `bson:"attempts"`

	CreatedAt   time.Time  `bson:"createdAt"`
	UpdatedAt   time.Time  `bson:"updatedAt"`
	CompletedAt *time.Time `bson:"completedAt"`
	RetriedAt   *time.Time `bson:"retriedAt,omitempty"`
	TraceParent string     `bson:"traceParent,omitempty"`
	Version     int64      `bson:"version"`
	// WriteToken is unique to the JobUpdate that wrote this version (empty
	// on an inserted job): it tells a write that landed from one that did
	// not when a shared bulkWrite matched fewer (see jobCommitter.resolve).
	WriteToken string `bson:"writeToken,omitempty"`

	// Outbox are the operational outbox events of the job's writes not yet
	// relayed (dispatch.JobUpdateParams.Outbox: its dispatch.discarded
	// event), kept in the job's document so that the one replace of the
	// update stores them. While it holds any, OutboxPending is
	// outboxPendingValue (the indexed field OutboxList finds them by, with
	// a string equality, which FerretDB v1 pushes down — a boolean one it
	// does not) and OutboxAt is when the outbox started (their order, and
	// the mark a later write's filter checks).
	Outbox        []statusEventDoc `bson:"operationalOutbox,omitempty"`
	OutboxPending string           `bson:"operationalOutboxPending,omitempty"`
	OutboxAt      *time.Time       `bson:"operationalOutboxAt,omitempty"`

	// StatusOutbox are the status events of the job's writes not yet
	// relayed to the statusEvents collection (see statusRelay), stored by
	// the job's own write; while it holds any, StatusPending is
	// statusPendingValue (indexed, found by a string equality).
	StatusOutbox  []statusEventDoc `bson:"statusOutbox,omitempty"`
	StatusPending string           `bson:"statusOutboxPending,omitempty"`
}

// retryDoc is a dispatch.Retry as stored.
type retryDoc struct {
	MaxAttempts           int `bson:"maxAttempts"`
	InitialBackoffSeconds int `bson:"initialBackoffSeconds"`
	MaxBackoffSeconds     int `bson:"maxBackoffSeconds"`
}

// attemptDoc is a dispatch.Attempt as stored.
type attemptDoc struct {
	Attempt      int       `bson:"attempt"`
	Action       string    `bson:"action,omitempty"`
	StartedAt    time.Time `bson:"startedAt"`
	DurationMs   int64     `bson:"durationMs"`
	StatusCode   int       `bson:"statusCode,omitempty"`
	Error        string    `bson:"error,omitempty"`
	ResponseBody string    `bson:"responseBody,omitempty"`
	Worker       string    `bson:"worker,omitempty"`
}

func toJobDoc(j *dispatch.Job) *jobDoc {
	d := &jobDoc{
		ID:             j.ID,
		Kind:           string(j.Kind),
		Code:           j.Code,
		Subject:        j.Subject,
		EventID:        j.EventID,
		SubscriptionID: j.SubscriptionID,
		Subscription:   j.Subscription,
		CorrelationID:  j.CorrelationID,
		TargetURL:      j.TargetURL,
		Mode:           string(j.Mode),
		Delivery:       string(j.Delivery),
		MessageGroup:   j.MessageGroup,
		OrderKey:       j.OrderKey(),
		DispatchPoolID: j.DispatchPoolID,
		Headers:        toKeyValues(j.Headers),
		TimeoutSeconds: j.TimeoutSeconds,
		MaxAgeSeconds:  j.MaxAgeSeconds,
		DataOnly:       j.DataOnly,
		Retry: retryDoc{
			MaxAttempts:           j.Retry.MaxAttempts,
			InitialBackoffSeconds: j.Retry.InitialBackoffSeconds,
			MaxBackoffSeconds:     j.Retry.MaxBackoffSeconds,
		},
		Payload:        j.Payload,
		Secret:         j.Secret,
		Auth:           toAuthDoc(j.Auth),
		TLS:            toTLSDoc(j.TLS),
		Status:         string(j.Status),
		AttemptCount:   j.AttemptCount,
		MaxAttempts:    j.MaxAttempts,
		NextAttemptAt:  msPtr(j.NextAttemptAt),
		LastError:      j.LastError,
		BlockedBy:      j.BlockedBy,
		Worker:         j.Worker,
		LeaseExpiresAt: msPtr(j.LeaseExpiresAt),
		CreatedAt:      ms(j.CreatedAt),
		UpdatedAt:      ms(j.UpdatedAt),
		CompletedAt:    msPtr(j.CompletedAt),
		RetriedAt:      msPtr(j.RetriedAt),
		TraceParent:    j.TraceParent,
		Version:        j.Version,
	}
	if j.Attempts != nil {
		d.Attempts = make([]attemptDoc, len(j.Attempts))
		for i, a := range j.Attempts {
			d.Attempts[i] = attemptDoc{
				Attempt:      a.Attempt,
				Action:       a.Action,
				StartedAt:    ms(a.StartedAt),
				DurationMs:   a.DurationMs,
				StatusCode:   a.StatusCode,
				Error:        a.Error,
				ResponseBody: a.ResponseBody,
				Worker:       a.Worker,
			}
		}
	}
	return d
}

func (d *jobDoc) asDomain() *dispatch.Job {
	j := &dispatch.Job{
		ID:             d.ID,
		Kind:           dispatch.Kind(d.Kind),
		Code:           d.Code,
		Subject:        d.Subject,
		EventID:        d.EventID,
		SubscriptionID: d.SubscriptionID,
		Subscription:   d.Subscription,
		CorrelationID:  d.CorrelationID,
		TargetURL:      d.TargetURL,
		Mode:           dispatch.Mode(d.Mode),
		Delivery:       dispatch.Delivery(d.Delivery),
		MessageGroup:   d.MessageGroup,
		DispatchPoolID: d.DispatchPoolID,
		Headers:        fromKeyValues(d.Headers),
		TimeoutSeconds: d.TimeoutSeconds,
		MaxAgeSeconds:  d.MaxAgeSeconds,
		DataOnly:       d.DataOnly,
		Retry: dispatch.Retry{
			MaxAttempts:           d.Retry.MaxAttempts,
			InitialBackoffSeconds: d.Retry.InitialBackoffSeconds,
			MaxBackoffSeconds:     d.Retry.MaxBackoffSeconds,
		},
		Payload:        d.Payload,
		Secret:         d.Secret,
		Auth:           d.Auth.asDomain(),
		TLS:            d.TLS.asDomain(),
		Status:         dispatch.Status(d.Status),
		AttemptCount:   d.AttemptCount,
		MaxAttempts:    d.MaxAttempts,
		NextAttemptAt:  utcPtr(d.NextAttemptAt),
		LastError:      d.LastError,
		BlockedBy:      d.BlockedBy,
		Worker:         d.Worker,
		LeaseExpiresAt: utcPtr(d.LeaseExpiresAt),
		CreatedAt:      utc(d.CreatedAt),
		UpdatedAt:      utc(d.UpdatedAt),
		CompletedAt:    utcPtr(d.CompletedAt),
		RetriedAt:      utcPtr(d.RetriedAt),
		TraceParent:    d.TraceParent,
		Version:        d.Version,
	}
	if d.Attempts != nil {
		j.Attempts = make([]dispatch.Attempt, len(d.Attempts))
		for i, a := range d.Attempts {
			j.Attempts[i] = dispatch.Attempt{
				Attempt:      a.Attempt,
				Action:       a.Action,
				StartedAt:    utc(a.StartedAt),
				DurationMs:   a.DurationMs,
				StatusCode:   a.StatusCode,
				Error:        a.Error,
				ResponseBody: a.ResponseBody,
				Worker:       a.Worker,
			}
		}
	}
	return j
}
