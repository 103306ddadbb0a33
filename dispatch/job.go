package dispatch

import (
	"slices"
	"time"

	"github.com/hooklane/hooklane/destination/endpoint"
)

// Kind says where a job comes from.
type Kind string

// Job kinds.
const (
	// KindEvent is a job created by an ingested event matching a subscription.
	KindEvent Kind = "EVENT"
	// KindTask is a job posted directly to POST /api/dispatch-jobs.
	KindTask Kind = "TASK"
)

// Mode is a subscription's dispatch mode: how jobs of one message group are
// ordered.
type Mode string

// Dispatch modes (API.md §6).
const (
	// ModeImmediate runs jobs in parallel with no ordering.
	ModeImmediate Mode = "IMMEDIATE"
	// ModeNextOnError starts first attempts of a group in ingest order, one
	// in flight at a time; a failing job leaves the line and retries later.
	ModeNextOnError Mode = "NEXT_ON_ERROR"
	// ModeBlockOnError delivers a job only after every earlier job of its
	// group is COMPLETED or CANCELLED.
	ModeBlockOnError Mode = "BLOCK_ON_ERROR"
)

// Valid reports whether m is a known mode.
func (m Mode) Valid() bool {
	return m == ModeImmediate || m == ModeNextOnError || m == ModeBlockOnError
}

// Ordered reports whether jobs of one message group are delivered one at a
// time in order under m.
func (m Mode) Ordered() bool { return m == ModeNextOnError || m == ModeBlockOnError }

// Delivery says whether the gateway pushes a job to its target or a worker
// pulls it (API.md §10).
type Delivery string

// Delivery kinds.
const (
	DeliveryPush Delivery = "push"
	DeliveryPull Delivery = "pull"
)

// Job is one delivery of one event to one subscription (KindEvent), or one
// directly posted payload (KindTask). Its JSON form is the API's.
type Job struct {
	ID             string `json:"id"`
	Kind           Kind   `json:"kind"`
	Code           string `json:"code"`
	Subject        string `json:"subject,omitempty"`
	EventID        string `json:"eventId,omitempty"`
	SubscriptionID string `json:"subscriptionId,omitempty"`
	// Subscription is the subscription's code.
	Subscription   string            `json:"subscription,omitempty"`
	CorrelationID  string            `json:"correlationId,omitempty"`
	TargetURL      string            `json:"targetUrl,omitempty"`
	Mode           Mode              `json:"mode"`
	Delivery       Delivery          `json:"delivery,omitempty"`
	MessageGroup   string            `json:"messageGroup,omitempty"`
	DispatchPoolID string            `json:"dispatchPoolId,omitempty"`
	Headers        map[string]string `json:"headers,omitempty"`
	TimeoutSeconds int               `json:"timeoutSeconds"`
	MaxAgeSeconds  int               `json:"maxAgeSeconds"`
	DataOnly       bool              `json:"dataOnly,omitempty"`
	Retry          Retry             `json:"retry"`
	// Payload is a TASK job's webhook body (JSON).
	Payload []byte `json:"payload,omitempty"`
	// Secret signs a TASK job's deliveries (EVENT jobs use their
	// subscription's secrets). Never shown by the API after creation.
	Secret string `json:"-"`
	// Auth and TLS are a TASK job's endpoint authentication (API.md §14;
	// an EVENT job's are its subscription's). Their secrets are
	// write-only: MarshalJSON masks them.
	Auth *endpoint.Auth `json:"auth,omitempty"`
	TLS  *endpoint.TLS  `json:"tls,omitempty"`

	Status        Status     `json:"status"`
	AttemptCount  int        `json:"attemptCount"`
	MaxAttempts   int        `json:"maxAttempts"`
	NextAttemptAt *time.Time `json:"nextAttemptAt"`
	LastError     *string    `json:"lastError"`
	// BlockedBy is the id of the unfinished earlier job holding this job
	// back in a BLOCK_ON_ERROR group, BlockedByPaused while its subscription
	// is paused, empty when not held.
	BlockedBy string `json:"blockedBy,omitempty"`
	// Worker is the claimant while IN_PROGRESS.
	Worker         string     `json:"worker,omitempty"`
	LeaseExpiresAt *time.Time `json:"leaseExpiresAt,omitempty"`
	Attempts       []Attempt  `json:"attempts"`

	CreatedAt   time.Time  `json:"createdAt"`
	UpdatedAt   time.Time  `json:"updatedAt"`
	CompletedAt *time.Time `json:"completedAt"`
	// RetriedAt is the latest operator retry: the job's max-age window
	// restarts there (see AgeStart). Nil when never retried.
	RetriedAt *time.Time `json:"retriedAt,omitempty"`
	// TraceParent is the W3C traceparent of the span that created the job
	// (the ingest request's), set only while tracing is on: every queue
	// message of the job carries it (Message), and each delivery attempt is
	// a span of that trace. Stored, never shown by the API.
	TraceParent string `json:"traceParent,omitempty"`

	// Version counts the writes of the job; the store refuses an update
	// whose expected version is not the stored one (optimistic locking).
	Version int64 `json:"-"`
}

// Attempt is one entry of a job's audit log: a push delivery attempt, or a
// pull worker's action.
type Attempt struct {
	Attempt      int       `json:"attempt"`
	Action       string    `json:"action,omitempty"`
	StartedAt    time.Time `json:"startedAt"`
	DurationMs   int64     `json:"durationMs"`
	StatusCode   int       `json:"statusCode,omitempty"`
	Error        string    `json:"error,omitempty"`
	ResponseBody string    `json:"responseBody,omitempty"`
	Worker       string    `json:"worker,omitempty"`
}

// Pull worker actions recorded in Attempt.Action.
const (
	ActionPicked    = "PICKED"
	ActionCompleted = "COMPLETED"
	ActionFailed    = "FAILED"
	ActionAbandoned = "ABANDONED"
	// ActionRetried marked an operator retry in the attempts of jobs
	// written before RetriedAt existed; AgeStart still reads it. Operator
	// actions are no longer attempts (API.md §5).
	ActionRetried = "RETRIED"
)

// AgeStart is when the job's max-age window began: its creation, or its
// latest operator retry, so that a job retried after it ERRORed for max age
// gets a real chance.
func (j *Job) AgeStart() time.Time {
	if j.RetriedAt != nil {
		return *j.RetriedAt
	}
	for _, v := range slices.Backward(j.Attempts) {
		if v.Action == ActionRetried {
			return v.StartedAt
		}
	}
	return j.CreatedAt
}

// Expired reports whether the job's max age has passed at now.
func (j *Job) Expired(now time.Time) bool {
	return j.MaxAgeSeconds > 0 && now.After(j.AgeDeadline())
}

// AgeDeadline is when the job's max age passes (meaningless when
// MaxAgeSeconds is 0).
func (j *Job) AgeDeadline() time.Time {
	return j.AgeStart().Add(time.Duration(j.MaxAgeSeconds) * time.Second)
}

// ResponseBodyLimit is how much of a receiver's answer an attempt keeps.
const ResponseBodyLimit = 1024

// QueueGroup is the queue message group for the job: its message group when
// its mode orders deliveries, else its own id (so unordered jobs never wait
// for one another).
func (j *Job) QueueGroup() string {
	if j.Mode.Ordered() && j.MessageGroup != "" {
		return j.MessageGroup
	}
	return j.ID
}

// OrderKey is the key that orders jobs within a message group: ingest order.
// Event ids are monotonic, so an EVENT job sorts by its event's id; a TASK
// job by its own (also monotonic) id.
func (j *Job) OrderKey() string {
	if j.EventID != "" {
		return j.EventID
	}
	return j.ID
}
