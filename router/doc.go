// Package router consumes the dispatch queue and delivers jobs to their
// destinations through a Transport (API.md §4–§6). It moves jobs only
// through the lifecycle verbs of package dispatch; the signed HTTP webhook
// is one Transport (package webhook), and a new destination type is
// another package implementing it, wired in cmd/hooklane.
//
// # Pipeline
//
// A Router runs Config.Receivers receive loops. Each loop first takes
// capacity (at most Config.MaxInFlight deliveries per router), then
// long-polls the queue for that many messages. Every message names one job
// and is handled in its own goroutine:
//
//  1. load the job; anything not QUEUED (done, cancelled, moved by a
//     poller) just has its message deleted;
//  2. EVENT jobs: load the subscription (gone → Lifecycle.Cancel; paused →
//     Lifecycle.ParkPaused) and the event;
//  3. Lifecycle.ClaimGated, the gated claim of package dispatch, runs
//     the gates in their order and then the claim, and says which stopped
//     the job (a dispatch.GateResult the router turns into the message's
//     fate):
//     a. the order gate of the job's mode (see Ordering); a group head that
//     looks lost is first delivered in this message's slot (lost_head.go)
//     and the head read last is handed to the gate, so the group is read
//     once;
//     b. admission: a share of the job's pool in this router (see Pools),
//     or the message goes back until the pool is expected to have room;
//     c. the circuit gate: while the subscription's circuit is open the job
//     is parked until its probe (API.md §12); when the probe is due,
//     exactly one job of all routers takes it; a parked job gives its
//     share back;
//     d. the claim: QUEUED → IN_PROGRESS under a lease (version-checked: of
//     two routers holding the same message, one wins; a job past its max
//     age goes to ERROR instead; a claim that met a newer version of the
//     message's snapshot reads the job and runs again);
//  4. wait for a pool slot and a rate token;
//  5. deliver through the Transport, which returns a dispatch.Outcome;
//  6. Lifecycle.RecordOutcome (the finish verb): the attempt is recorded and the job moves on
//     (COMPLETED, PENDING with a backoff, or ERROR; the next held job of a
//     BLOCK_ON_ERROR group is released), the outcome counts into the
//     circuit, and the message is deleted.
//
// # Guarantees
//
// The store is the truth and every move of a job is a version-checked write;
// the queue is a fast path. Delivery is at least once: a router that dies
// mid-delivery leaves an IN_PROGRESS job whose lease (timeout + Config.Lease)
// expires, and the rescuer (package pollers) returns it to PENDING. A lost
// message leaves a QUEUED job that the rescuer re-queues. On shutdown (ctx
// cancelled) the receive loops stop, deliveries in flight finish (each
// bounded by its timeout), a claimed job still waiting for its pool is
// handed back PENDING and due at once (its attempt not counted), and
// received messages not started are made visible again at once.
//
// # Ordering
//
// The queue message group of an ordered job is its message group, so the
// queue itself keeps one message of a group in flight and hands them out in
// send order. On top of that:
//
//   - IMMEDIATE jobs use their own id as queue group: no ordering, full
//     parallelism even within a message group.
//   - NEXT_ON_ERROR: a failing job goes PENDING with its backoff and its
//     message is deleted, so the next job of the group proceeds; the retry
//     is sent to the back of the group. A first attempt waits (parked) while
//     an earlier job of its group has not had its first attempt (its send
//     failed or it was parked), so first attempts start in ingest order.
//   - BLOCK_ON_ERROR: before the claim, the order gate lists the group's jobs
//     with a lower OrderKey that are unfinished (PENDING, QUEUED,
//     IN_PROGRESS, ERROR). If there is one, the job is parked PENDING with
//     BlockedBy = that job's id, a dispatch.blocked status event, and a far
//     NextAttemptAt (dispatch.LifecycleConfig.BlockedRecheck, a slow safety
//     poll — never a busy loop). When a job of the group completes or is
//     cancelled (by the router or the API), Lifecycle.ReleaseGroup queues the leading
//     run of parked jobs at the group's head (the queue then hands them out
//     one by one, each checked again before its claim); after parking, the
//     router runs
//     the same release once more, so a blocker finishing between check and
//     park is never missed. Jobs of a paused subscription are parked with
//     BlockedBy = dispatch.BlockedByPaused and released by
//     ReleaseSubscription when it is resumed.
//   - In both modes, an earlier job that holds a later one back while it is
//     QUEUED, never attempted and unchanged for
//     dispatch.LifecycleConfig.LostHeadAfter is
//     taken as lost (its sender died between the store write and the send)
//     and sent again (resendLostHead), so the group does not wait for the
//     stale-queued rescuer.
//
// # Pools
//
// Every delivery runs in a Pool (its subscription's, else the default):
// at most Concurrency requests in flight and a token bucket of
// RatePerSecond with Burst (golang.org/x/time/rate). Pools are separate
// budgets, and one pool may hold (running or waiting for a slot) at most
// 3/4 of MaxInFlight of a router's capacity, so a slow or stuck target
// never starves other pools; within that share, work waits here for the
// pool's slots, so a slot that frees never waits on the queue. Past it,
// messages go back to the queue until the pool is expected to have room:
// about half the time its held work takes to drain at its recent delivery
// time, concurrency and rate (Pool.DrainEstimate), at most
// Config.PoolBusyDelay — never a fixed sleep that leaves slots idle. The
// capacity such a message took stays out of the receive loop until the pool
// frees room (Pool.WaitRoom) or 100 ms pass, so a backlog of one pool's work
// is not received, decoded and put back in a spin, while other pools' work
// behind it in the queue is still found. A PATCHed pool is
// replaced on Pools.Invalidate: deliveries in flight finish under the old
// budget, new ones use the new one.
//
// # Outcomes
//
// A Transport reports success, a retryable failure (with an optional
// minimum wait, dispatch.RetryAfter), or a permanent one (dispatch.Permanent);
// the one retry decision of package dispatch takes it from there. For the
// webhook transport: a 2xx within timeoutSeconds is success; network
// errors, timeouts, 408, 425, 429 and 5xx are retryable (a 429/503
// Retry-After raises the wait); redirects are not followed and end the job
// in ERROR like any other 4xx, as does a target refused by the SSRF guard
// (checked on the resolved IP at connect time). Each attempt records its
// status code, duration, error and the first 1 KiB of the response body.
package router
