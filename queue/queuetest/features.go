// Package queuetest is the conformance suite every queue adapter passes.
package queuetest

import "time"

// Features says where an adapter may legitimately differ from another, so
// that one suite serves them all. The zero value asks for the strictest
// behaviour; each field relaxes or tunes one check.
type Features struct {
	// DedupWindow is how long a DedupID suppresses a resend (SQS: 5 min).
	// When it is positive and at most DedupExpiryCheckMax, the suite also
	// checks that a DedupID is accepted again once the window has passed.
	DedupWindow time.Duration
	// VisibilityGranularity is the smallest visibility timeout step the
	// adapter honours (SQS: 1 s; memqueue: finer). The suite's short
	// visibility timeouts are this long; 0 means 1 s.
	VisibilityGranularity time.Duration
	// MaxWait is the longest long-poll wait the adapter supports (SQS:
	// 20 s); 0 means 20 s.
	MaxWait time.Duration
	// GroupBatch is set when one Receive may return several consecutive
	// messages of the same group, in order, which are then all in flight
	// together (SQS FIFO does this). The group stays locked until every
	// one of them is deleted or returned. Unset, a Receive returning two
	// messages of one group fails the suite.
	GroupBatch bool
	// LaxReceipts is set when the adapter cannot tell a stale receipt
	// handle (of a message already deleted, or superseded by a later
	// redelivery) from the current one, so Delete and ChangeVisibility with
	// it may succeed. The suite then skips the stale-handle checks; a
	// malformed handle must still be rejected with queue.ErrInvalidReceipt.
	LaxReceipts bool
	// LaxMalformedDelete is set when Delete with a handle the queue never
	// issued may succeed. Real SQS rejects it (ReceiptHandleIsInvalid), but
	// fauxqs, the SQS server of the local test stack, ignores unknown handles
	// on DeleteMessage. ChangeVisibility must still reject such a handle.
	LaxMalformedDelete bool
}

// DedupExpiryCheckMax is the longest dedup window the suite waits out to
// check dedup expiry; longer windows (SQS's 5 min) are not waited for.
const DedupExpiryCheckMax = 3 * time.Second

// shortVisibility is the visibility timeout the suite uses when it wants a
// timeout to expire.
func (f Features) shortVisibility() time.Duration {
	if f.VisibilityGranularity <= 0 {
		return time.Second
	}
	return f.VisibilityGranularity
}

// maxWait is the adapter's long-poll cap, defaulted.
func (f Features) maxWait() time.Duration {
	if f.MaxWait <= 0 {
		return 20 * time.Second
	}
	return f.MaxWait
}

// pollWait is the wait of one Receive in a polling loop: long enough to
// exercise long polling, short enough to loop a few times in a deadline.
func (f Features) pollWait() time.Duration {
	return min(f.maxWait(), time.Second)
}
