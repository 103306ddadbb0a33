// Package queuetest is the conformance suite every queue adapter passes.
package queuetest

import "time"

// Features says where an adapter may legitimately differ from another, so
// that one suite serves them all.
type Features struct {
	// DedupWindow is how long a DedupID suppresses a resend (SQS: 5 min).
	DedupWindow time.Duration
	// VisibilityGranularity is the smallest visibility timeout step the
	// adapter honours (SQS: 1 s; memqueue: finer).
	VisibilityGranularity time.Duration
	// MaxWait is the longest long-poll wait the adapter supports.
	MaxWait time.Duration
}
