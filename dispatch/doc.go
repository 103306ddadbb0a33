// Package dispatch owns dispatch jobs and their lifecycle: the state
// machine, the verbs that move a job, the one retry decision, message
// groups and ordering, and the pools' definitions. It is the only package
// that writes a job; the router, pull delivery (package pull), the pollers
// and the API propose moves by calling verbs of a Lifecycle, which decides,
// transitions, emits the status events and writes, version-checked.
//
// # The machine
//
// A job is PENDING (waiting to be queued), QUEUED (on the queue, or waiting
// for a pull worker), IN_PROGRESS (claimed under a lease), COMPLETED,
// ERROR or CANCELLED. status.go holds the statuses and every allowed move
// (Job.Transition); a move outside it is an ErrInvalidTransition.
//
//	          ┌──────── retry wait, lease lost, blocked, paused ───────┐
//	          ▼                                                         │
//	create ─► PENDING ─QueueDue─► QUEUED ─Claim─► IN_PROGRESS ─────────┤
//	   │                           │   ▲  │            │ RecordOutcome  │
//	   └──────── (QUEUED) ─────────┘   │  │            │ / Report       │
//	                         Park,     │  └─RescueStale┤                │
//	                         HoldForOrder              ├─ 2xx ─► COMPLETED
//	                                   │               └─ no retry ─► ERROR
//	                  Retry (operator) └──────────────────── ERROR, CANCELLED
//	Cancel: PENDING, QUEUED, IN_PROGRESS, ERROR ─► CANCELLED
//
// # The verbs
//
// Every verb owns its whole write: the decision, the transition, the status
// events (stream.Event, stored with the job in one write), the
// version-checked JobUpdate, and what to do when another writer won.
//
//   - Creation: NewEventJob and NewTaskJob build jobs (event job ids are
//     derived from (event, subscription), so a repeated creation is
//     harmless); Insert stores them with their creation events, Create also
//     sends them; Send puts stored QUEUED push jobs on the queue, moving a
//     job whose send failed back to PENDING (Enqueuer, with a breaker that
//     spares producers a queue that is down).
//   - Delivery (router and pull): ClaimGated (gate.go) is the one verb a
//     delivery starts with: the order gate (HoldForOrder for push, which
//     parks a held job; Claimable's rule for pull, order.go), the caller's
//     admission (an Admitter: the router's share of a pool; none for pull),
//     the circuit gate (HoldForCircuit, push only), then Claim, which moves
//     QUEUED → IN_PROGRESS under a lease (of racing claimants exactly one
//     wins, ErrClaimLost for the others; a job past its max age is
//     discarded, ErrExpired); it returns a GateResult saying which gate
//     stopped the job, and gives back an admission it does not use. The
//     finish verbs RecordOutcome (push) and Report (pull, idempotent for the holder)
//     record the attempt and move the job on; Heartbeat extends a pull
//     lease; HandBack returns a claim that never started.
//   - Waiting: Park and ParkPaused move a QUEUED job back to PENDING until
//     a time, held by a blocker or a paused subscription; ReleaseGroup and
//     ReleaseSubscription queue held jobs as soon as what held them is gone.
//   - Recovery (pollers): QueueDue queues due PENDING jobs in group order;
//     RescueStale returns QUEUED jobs whose message was lost; RescueExpired
//     recovers claims whose worker died (the lost attempt counts as failed).
//   - Operators (API): Retry and RetryMany (ERROR/CANCELLED → queued at
//     once, maxAttempts more attempts, the max-age window restarted);
//     Cancel; CancelSubscription, the cascade of a subscription's deletion.
//   - Endpoint health (circuit.go, circuit_lifecycle.go): HoldForCircuit
//     is ClaimGated's last gate before the claim; RecordOutcome counts each
//     push outcome into the subscription's circuit; ReleaseCircuit and
//     ResetCircuit release what a circuit held. See "Circuits" below.
//
// # One retry decision
//
// After a failed attempt — a push outcome, a pull worker's failure, an
// abandoned claim — nextAttempt decides: a permanent failure
// (Permanent, e.g. a 4xx) or no attempt left ends in ERROR; otherwise the
// job waits a random time in [d/2, d], d = min(maxBackoff, initial ×
// 2^(n−1)), raised to the destination's RetryAfter and capped by
// maxBackoff, unless that passes its max age (→ ERROR).
//
// # Concurrency
//
// Several instances run verbs on the same jobs at once. Every write checks
// the version it read; a verb that loses either re-reads and applies its
// decision to the fresh state (mutate: operator moves, outcomes, reports)
// or gives way to the winner (tryWrite: claims, parks, queue moves,
// rescues, whose winner carries the job on). The status event ids of one
// job sort in causal order across instances (Job.StatusEvent).
//
// # Circuits
//
// Each push subscription has a Circuit (API.md §12), stored beside its
// jobs and written only here, version-checked like a job. RecordOutcome
// counts: a retryable failure adds to ConsecutiveFailures and opens the
// circuit at CircuitPolicy.Failures; a success closes it and clears the
// counts; a Permanent failure (a 4xx ending the job) neither counts nor
// resets. While OPEN, HoldForCircuit parks every job that comes due
// PENDING until NextProbeAt (BlockedBy BlockedByCircuit; no attempt
// consumed; never past the job's max age, at which the job is discarded).
// From NextProbeAt the first job through the gate takes the probe slot with
// one version-checked write (HALF_OPEN): of racing routers and instances
// exactly one wins, the others park until the probe's claim ends. The
// probe's success closes the circuit and ReleaseCircuit queues the waiting
// jobs in ingest order; its failure reopens it with the cooldown doubled
// (at most MaxCooldown) and makes one waiting job due at the new
// NextProbeAt. In an ordered mode the order gate runs first, so the probe
// is its group's head and the group's later jobs wait behind it as usual.
// Every failure also runs the auto-disable clock (FailingSince): a failure
// AutoDisableAfter past it pauses the subscription (SubscriptionDisable,
// subscription.disabled); ResetCircuit, on resume, closes the circuit.
//
// # Ordering
//
// The message group of an ordered job (NEXT_ON_ERROR, BLOCK_ON_ERROR) is
// its queue group, so the FIFO queue keeps one message of a group in flight
// and hands them out in send order; the order gate in order.go adds what
// the queue cannot know: a BLOCK_ON_ERROR job waits for every earlier
// unfinished job of its group, a NEXT_ON_ERROR first attempt for every
// earlier job not yet attempted, and a pull job also for a job of its
// group in flight.
package dispatch
