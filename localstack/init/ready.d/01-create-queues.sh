#!/usr/bin/env bash
# LocalStack init hook (mounted at /etc/localstack/init/ready.d by
# docker-compose.yml): creates Hooklane's FIFO job queue and its dead-letter
# queue once LocalStack is ready. The attributes match sqsqueue.CreateQueue:
# high-throughput FIFO (DeduplicationScope=messageGroup,
# FifoThroughputLimit=perMessageGroupId), explicit dedup ids only, 120 s
# visibility, redrive to the DLQ after 10 receives. Re-running it is harmless:
# CreateQueue with identical attributes returns the existing queue.
set -euo pipefail

region="${AWS_DEFAULT_REGION:-us-east-1}"
jobs_queue="${HOOKLANE_SQS_QUEUE_NAME:-hooklane-jobs.fifo}"
dlq="${HOOKLANE_SQS_DLQ_NAME:-hooklane-dlq.fifo}"
max_receive_count="${HOOKLANE_SQS_MAX_RECEIVE_COUNT:-10}"

fifo_attrs='FifoQueue=true,ContentBasedDeduplication=false,DeduplicationScope=messageGroup,FifoThroughputLimit=perMessageGroupId,VisibilityTimeout=120'

awslocal --region "$region" sqs create-queue --queue-name "$dlq" --attributes "$fifo_attrs" >/dev/null

dlq_url="$(awslocal --region "$region" sqs get-queue-url --queue-name "$dlq" --query QueueUrl --output text)"
dlq_arn="$(awslocal --region "$region" sqs get-queue-attributes --queue-url "$dlq_url" \
	--attribute-names QueueArn --query Attributes.QueueArn --output text)"

# The CLI's shorthand syntax cannot carry the JSON redrive policy: pass JSON.
attrs_json="$(printf '{"FifoQueue":"true","ContentBasedDeduplication":"false","DeduplicationScope":"messageGroup","FifoThroughputLimit":"perMessageGroupId","VisibilityTimeout":"120","RedrivePolicy":"{\\"deadLetterTargetArn\\":\\"%s\\",\\"maxReceiveCount\\":\\"%s\\"}"}' \
	"$dlq_arn" "$max_receive_count")"
awslocal --region "$region" sqs create-queue --queue-name "$jobs_queue" --attributes "$attrs_json" >/dev/null

echo "hooklane: created $dlq and $jobs_queue (redrive after $max_receive_count receives)"
