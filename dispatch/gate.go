package dispatch

import (
	"context"
	"errors"
	"time"

	"github.com/hooklane/hooklane/store"
)

// The gated claim: the one verb a delivery starts with, push or pull. It
// runs the gates in their order — the order gate, the caller's admission,
// the circuit gate — and then the claim, and says what came of it. The
// order is the contract:
//   - the order gate first: a job its group holds back is parked (push) or
//     left for its turn (pull) without taking any admission, and the
//     circuit's probe is always its group's head;
//   - admission before the circuit gate: a job the caller has no room for
//     goes back without touching the circuit (it would take a probe slot it
//     cannot use);
//   - the circuit gate last before the claim: a job it parks gives its
//     admission back at once.

// Admitter is the caller's bound on the deliveries it holds (the router's
// share of a pool), taken after the order gate and before the circuit gate.
type Admitter interface {
	// TryAdmit takes room for one more delivery; false when there is none
	// (nothing taken).
	TryAdmit() bool
	// Unadmit gives back what a successful TryAdmit took.
	Unadmit()
}

// GateParams are the arguments of ClaimGated.
type GateParams struct {
	// Claim is the claim's worker, lease and kind. A pull claim (Pull) is
	// gated by Claimable's rule: a job of its group in flight holds it too,
	// and a job held back is left QUEUED (nothing parked).
	Claim ClaimParams
	// Admit, when set, is asked for room after the order gate; nil admits
	// every job. On GateClaimed the room is the caller's to give back when
	// the delivery ends; on every other result (and on an error) it was
	// given back already.
	Admit Admitter
	// Head is j's group head as the caller has just read it with GroupHead
	// (nil: none holds j back), when HeadKnown: the order gate then does
	// not read the group again (the router's in-place delivery of lost
	// heads reads it). Push claims only.
	Head      *Job
	HeadKnown bool
	// Snapshot marks j as a copy that may be older than the stored job (a
	// queue message's snapshot): a lost claim is then GateStale, the job
	// not read back. Otherwise a lost push claim reads the job back to
	// tell GateRefused from GateLost.
	Snapshot bool
}

// GateResult is what came of ClaimGated.
type GateResult int

// The results of ClaimGated. Only GateClaimed leaves the job claimed.
const (
	// GateFailed: an error stopped the verb (returned with it).
	GateFailed GateResult = iota
	// GateClaimed: j is IN_PROGRESS for the caller, who delivers it and
	// ends the claim with RecordOutcome, the finish verb (or HandBack).
	GateClaimed
	// GateHeldByOrder: an earlier job of the group holds j back; a push job
	// was parked PENDING (HoldForOrder), a pull job left QUEUED.
	GateHeldByOrder
	// GateBusy: the Admitter had no room; j was not touched.
	GateBusy
	// GateHeldByCircuit: the subscription's circuit held j; it was parked
	// PENDING (HoldForCircuit), or moved to ERROR when its max age passed
	// while it waited.
	GateHeldByCircuit
	// GateExpired: j's max age passed before the claim; it was moved to
	// ERROR (dispatch.discarded).
	GateExpired
	// GateStale: the claim lost to a newer version of a Snapshot job; read
	// the job and try again.
	GateStale
	// GateRefused: the store refused the claim with the job unchanged (see
	// ErrKeepMessage): keep its message and try again later.
	GateRefused
	// GateLost: another writer moved j first (claimed, parked, cancelled);
	// whoever moved it carries it on.
	GateLost
)

// String names the result, for logs and test failures.
func (r GateResult) String() string {
	switch r {
	case GateFailed:
		return "failed"
	case GateClaimed:
		return "claimed"
	case GateHeldByOrder:
		return "held by order"
	case GateBusy:
		return "busy"
	case GateHeldByCircuit:
		return "held by circuit"
	case GateExpired:
		return "expired"
	case GateStale:
		return "stale"
	case GateRefused:
		return "refused"
	case GateLost:
		return "lost"
	default:
		return "unknown"
	}
}

// ClaimGated runs the gates of a QUEUED job the caller received (push) or
// listed (pull) and claims it: the order gate (HoldForOrder, or Claimable's
// rule for a pull claim), the caller's admission (p.Admit), the circuit
// gate (HoldForCircuit, push only; a probe slot it takes lasts as long as
// the claim's lease), then Claim. The result says which stopped it, if
// any; see GateResult. On GateClaimed, j is the claimed job.
func (lc *Lifecycle) ClaimGated(ctx context.Context, j *Job, p GateParams) (GateResult, error) {
	if res, err := lc.orderGate(ctx, j, &p); err != nil || res != GateClaimed {
		return res, err
	}
	if p.Admit != nil && !p.Admit.TryAdmit() {
		return GateBusy, nil
	}
	res, err := lc.circuitAndClaim(ctx, j, &p)
	if p.Admit != nil && res != GateClaimed {
		p.Admit.Unadmit()
	}
	return res, err
}

// orderGate is ClaimGated's first gate; GateClaimed means passed.
func (lc *Lifecycle) orderGate(ctx context.Context, j *Job, p *GateParams) (GateResult, error) {
	var (
		held bool
		err  error
	)
	switch {
	case p.Claim.Pull:
		var b *Job
		b, err = lc.blocker(ctx, j, true)
		held = b != nil
	case p.HeadKnown:
		held, err = lc.HoldForOrderBehind(ctx, j, p.Head)
	default:
		held, err = lc.HoldForOrder(ctx, j)
	}
	switch {
	case err != nil:
		return GateFailed, err
	case held:
		return GateHeldByOrder, nil
	}
	return GateClaimed, nil
}

// circuitAndClaim is ClaimGated past its admission.
func (lc *Lifecycle) circuitAndClaim(ctx context.Context, j *Job, p *GateParams) (GateResult, error) {
	// The circuit's probe slot lasts as long as the claim would.
	held, err := lc.HoldForCircuit(ctx, j, p.Claim.Lease-time.Duration(j.TimeoutSeconds)*time.Second)
	switch {
	case err != nil:
		return GateFailed, err
	case held:
		return GateHeldByCircuit, nil
	}
	err = lc.Claim(ctx, j, p.Claim)
	switch {
	case err == nil:
		return GateClaimed, nil
	case errors.Is(err, ErrExpired):
		return GateExpired, nil
	case !errors.Is(err, store.ErrConflict):
		return GateFailed, err
	case p.Snapshot:
		return GateStale, nil
	case !p.Claim.Pull && lc.Unmoved(ctx, j):
		return GateRefused, nil
	}
	return GateLost, nil
}
