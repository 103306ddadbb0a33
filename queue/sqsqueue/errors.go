package sqsqueue

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/smithy-go"

	"github.com/hooklane/hooklane/queue"
)

// translate maps an SQS error to the port's sentinels, keeping the original
// in the chain: a missing queue is queue.ErrNotFound and, for calls that take
// a receipt handle (receipt true), a malformed, stale or spent handle is
// queue.ErrInvalidReceipt. A call aborted by ctx reports ctx's error.
func translate(ctx context.Context, err error, receipt bool) error {
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("%w: %w", ctxErr, err)
	}
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return err
	}
	switch apiErr.ErrorCode() {
	case "QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue":
		return fmt.Errorf("%w: %w", queue.ErrNotFound, err)
	}
	if receipt && receiptInvalid(apiErr.ErrorCode(), apiErr.ErrorMessage()) {
		return fmt.Errorf("%w: %w", queue.ErrInvalidReceipt, err)
	}
	return err
}

// receiptInvalid reports whether an SQS error code and message say that a
// receipt handle is malformed, stale or spent.
func receiptInvalid(code, message string) bool {
	switch code {
	case "ReceiptHandleIsInvalid", "MessageNotInflight",
		"InvalidReceiptHandle", "AWS.SimpleQueueService.MessageNotInflight":
		return true
	case "InvalidParameterValue":
		// Real SQS reports an expired handle as "Value ... for parameter
		// ReceiptHandle is invalid. Reason: The receipt handle has expired."
		return strings.Contains(strings.ToLower(message), "receipthandle")
	}
	return false
}

// entryReceiptError is the error of one rejected batch entry that takes a
// receipt handle: queue.ErrInvalidReceipt when the handle was at fault.
func entryReceiptError(e *EntryError) error {
	if receiptInvalid(e.Code, e.Message) {
		return fmt.Errorf("%w: %w", queue.ErrInvalidReceipt, e)
	}
	return e
}
