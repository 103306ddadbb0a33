package sqsqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// ErrNotFIFO is returned by Check for a queue that is not an SQS FIFO queue.
var ErrNotFIFO = errors.New("not an SQS FIFO queue")

// LowMaxReceiveCount is the redrive policy's maxReceiveCount below which
// Check warns: a consumer puts messages back on purpose (pool full, a
// refused store write), and each return counts as a receive.
const LowMaxReceiveCount = 5

// Attributes are the attributes of a queue that matter to the adapter, as
// Check reads them. SQS answers every one for a FIFO queue, defaults
// included.
type Attributes struct {
	// FIFO is FifoQueue=true.
	FIFO bool
	// ContentBasedDeduplication is unused: every message carries its own
	// deduplication id.
	ContentBasedDeduplication bool
	// DeduplicationScope is "queue" (the default) or "messageGroup".
	DeduplicationScope string
	// FifoThroughputLimit is "perQueue" (the default) or "perMessageGroupId".
	FifoThroughputLimit string
	// VisibilityTimeout is the queue's default; unused when every Receive
	// asks for its own (Hooklane's router does: its lease).
	VisibilityTimeout time.Duration
	// Delay holds every message back before its first receive
	// (DelaySeconds).
	Delay time.Duration
	// Retention is how long SQS keeps a message (MessageRetentionPeriod).
	Retention time.Duration
	// MaxReceiveCount is how many receives move a message to
	// DeadLetterTargetARN (the redrive policy); 0 without one.
	MaxReceiveCount     int
	DeadLetterTargetARN string
}

// HighThroughput reports whether the queue is in SQS's high-throughput FIFO
// mode (DeduplicationScope=messageGroup, FifoThroughputLimit=perMessageGroupId),
// whose limits apply per message group instead of to the whole queue.
func (a *Attributes) HighThroughput() bool {
	return a.DeduplicationScope == "messageGroup" && a.FifoThroughputLimit == "perMessageGroupId"
}

// Check reads the queue's attributes with GetQueueAttributes. It refuses a
// queue that is not FIFO (ErrNotFIFO): ordering within a message group and
// deduplication both need one. It logs what the adapter assumes of the
// others, which it works with at any value:
//   - deduplication ids are the sender's and unique across groups
//     (Hooklane's: job id and version), so DeduplicationScope queue and
//     messageGroup behave alike and ContentBasedDeduplication is unused; a
//     re-send under an id seen within 5 minutes is accepted and dropped;
//   - every receive sets its own visibility timeout, so the queue's
//     VisibilityTimeout is unused;
//   - a redrive policy moves a message received MaxReceiveCount times to the
//     dead-letter queue, where the gateway never looks: its job stays in the
//     store and is sent again (lost group head, stale-queued rescuer);
//   - DelaySeconds delays every message: it warns when set;
//   - the default throughput mode caps the whole queue at SQS's per-queue
//     FIFO limit; high-throughput mode is recommended (see CreateQueue).
//
// A missing queue is queue.ErrNotFound.
func (q *Queue) Check(ctx context.Context) (*Attributes, error) {
	out, err := q.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(q.queueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		return nil, fmt.Errorf("check queue %s: %w", q.queueURL, translate(ctx, err, false))
	}
	a, err := parseAttributes(out.Attributes)
	if err != nil {
		return nil, fmt.Errorf("check queue %s: %w", q.queueURL, err)
	}
	if !a.FIFO {
		return a, fmt.Errorf("check queue %s: %w (FifoQueue is %q): Hooklane needs FIFO message groups for per-group order "+
			"and deduplication ids for its re-sends; create the queue with FifoQueue=true (its name ends in .fifo), "+
			"e.g. with sqsqueue.CreateQueue or localstack/init/ready.d/01-create-queues.sh",
			q.queueURL, ErrNotFIFO, out.Attributes[string(types.QueueAttributeNameFifoQueue)])
	}
	q.logAssumptions(ctx, a)
	return a, nil
}

func (q *Queue) logAssumptions(ctx context.Context, a *Attributes) {
	log := q.logger.With("queue_url", q.queueURL)
	log.InfoContext(ctx, "sqs fifo queue checked",
		"high_throughput", a.HighThroughput(), "deduplication_scope", a.DeduplicationScope,
		"fifo_throughput_limit", a.FifoThroughputLimit, "content_based_deduplication", a.ContentBasedDeduplication,
		"visibility_timeout", a.VisibilityTimeout, "delay", a.Delay, "retention", a.Retention,
		"redrive_max_receive_count", a.MaxReceiveCount, "dead_letter_queue", a.DeadLetterTargetARN)
	log.InfoContext(ctx, "sqs queue assumptions: each message carries its own deduplication id (job id and version), "+
		"so the deduplication scope and content-based deduplication do not matter; each receive sets its own "+
		"visibility timeout (the lease), so the queue's default is unused")
	if !a.HighThroughput() {
		log.InfoContext(ctx, "sqs queue in standard FIFO throughput mode: SQS caps the whole queue at its per-queue FIFO "+
			"limit; create it with DeduplicationScope=messageGroup and FifoThroughputLimit=perMessageGroupId for more")
	}
	if a.Delay > 0 {
		log.WarnContext(ctx, "sqs queue delays every message (DelaySeconds): every delivery waits that long", "delay", a.Delay)
	}
	switch {
	case a.MaxReceiveCount == 0:
	case a.MaxReceiveCount < LowMaxReceiveCount:
		log.WarnContext(ctx, "sqs queue redrives a message to its dead-letter queue after few receives; messages put back "+
			"(pool full, a refused store write) reach it soon, and their jobs wait for a re-send",
			"redrive_max_receive_count", a.MaxReceiveCount)
	default:
		log.InfoContext(ctx, "sqs queue redrives messages to a dead-letter queue that the gateway does not read: "+
			"their jobs stay in the store and are sent again (lost group head, stale-queued rescuer)",
			"redrive_max_receive_count", a.MaxReceiveCount)
	}
}

// parseAttributes reads the attributes Check needs from a
// GetQueueAttributes answer.
func parseAttributes(m map[string]string) (*Attributes, error) {
	a := &Attributes{
		FIFO:                      m[string(types.QueueAttributeNameFifoQueue)] == "true",
		ContentBasedDeduplication: m[string(types.QueueAttributeNameContentBasedDeduplication)] == "true",
		DeduplicationScope:        m[string(types.QueueAttributeNameDeduplicationScope)],
		FifoThroughputLimit:       m[string(types.QueueAttributeNameFifoThroughputLimit)],
	}
	for name, d := range map[types.QueueAttributeName]*time.Duration{
		types.QueueAttributeNameVisibilityTimeout:      &a.VisibilityTimeout,
		types.QueueAttributeNameDelaySeconds:           &a.Delay,
		types.QueueAttributeNameMessageRetentionPeriod: &a.Retention,
	} {
		v, ok := m[string(name)]
		if !ok {
			continue
		}
		s, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %q is not a number of seconds: %w", name, v, err)
		}
		*d = time.Duration(s) * time.Second
	}
	if p := m[string(types.QueueAttributeNameRedrivePolicy)]; p != "" {
		var policy struct {
			DeadLetterTargetARN string          `json:"deadLetterTargetArn"`
			MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
		}
		if err := json.Unmarshal([]byte(p), &policy); err != nil {
			return nil, fmt.Errorf("attribute RedrivePolicy: %w", err)
		}
		// SQS writes the count as a number; CreateQueue callers often as a
		// string.
		var n int
		if err := json.Unmarshal(policy.MaxReceiveCount, &n); err != nil {
			var s string
			if err := json.Unmarshal(policy.MaxReceiveCount, &s); err != nil {
				return nil, fmt.Errorf("attribute RedrivePolicy: maxReceiveCount %s: %w", policy.MaxReceiveCount, err)
			}
			if n, err = strconv.Atoi(s); err != nil {
				return nil, fmt.Errorf("attribute RedrivePolicy: maxReceiveCount %q: %w", s, err)
			}
		}
		a.MaxReceiveCount, a.DeadLetterTargetARN = n, policy.DeadLetterTargetARN
	}
	return a, nil
}
