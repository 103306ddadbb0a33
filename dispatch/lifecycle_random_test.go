package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/clocktest"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/queue"
	"github.com/hooklane/hooklane/queue/memqueue"
	"github.com/hooklane/hooklane/store"
)

// TestLifecycleRandomized drives random verb sequences on a set of jobs from
// several instances at once (separate Lifecycle values on one store and one
// queue, their clocks apart), each with several goroutines acting as its
// routers, pull workers, pollers and operators. Then it checks that no
// illegal transition, lost job or double claim appeared:
//   - every job still exists, with a valid status;
//   - the status events of each job, in id order, are a legal walk of the
//     machine (dispatch.CanTransition) ending in the job's status, and
//     every dispatch.started follows a QUEUED status;
//   - each successful Claim produced its own dispatch.started and its own
//     version: two claims never won from the same version;
//   - a push job's attempts are numbered 1…AttemptCount (AttemptCount − 1
//     while IN_PROGRESS) without gaps or repeats (API.md §5);
//   - a job's versions only grow, as each goroutine reads them, and no two
//     writes reported the same version;
//   - a job seen COMPLETED stays COMPLETED.
//
// Every random choice of each goroutine follows from the seed, which the
// test logs; HOOKLANE_TEST_LIFECYCLE_SEED sets it to replay a failure. The
// interleaving of the goroutines is the scheduler's, so a replay makes the
// same choices but may not meet the same states: run it a few times.
func TestLifecycleRandomized(t *testing.T) {
	t.Parallel()
	seed := randomSeed(t)
	for _, k := range storeKinds() {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, k.open(t), seed)
			w.run(t)
			w.check(t)
		})
	}
}

// Size and bounds of the randomized run.
const (
	randInitialJobs   = 4
	randMaxJobs       = 150
	randInstances     = 3
	randActorsEach    = 2
	randMaxSteps      = 400
	randBudget        = 3 * time.Second
	randRecheck       = 20 * time.Second
	randAdvanceMax    = 3 * time.Second
	randSkewMax       = 60 * time.Millisecond
	randLeaseShortest = 5 * time.Second
	randLeaseSpread   = 25 * time.Second
)

// randomSeed returns the run's seed: HOOKLANE_TEST_LIFECYCLE_SEED, else a
// random one. It logs it.
func randomSeed(t *testing.T) uint64 {
	t.Helper()
	const env = "HOOKLANE_TEST_LIFECYCLE_SEED"
	seed := rand.Uint64()
	if s := os.Getenv(env); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, env)
	}
	t.Logf("seed %d (%s=%d makes the same random choices)", seed, env, seed)
	return seed
}

// instance is one gateway instance: its lifecycle and its worker id.
type instance struct {
	lc     *dispatch.Lifecycle
	worker string
	now    func() time.Time
}

// group is an ordered message group of the run.
type group struct{ sub, name string }

// world is the shared state of a randomized run.
type world struct {
	st        lifecycleStore
	q         *memqueue.Queue
	clk       *clocktest.Clock
	instances []*instance
	batches   []batch
	groups    []group
	subs      []string
	seed      uint64
	// ids issues the job ids, in creation order (the order key of a TASK
	// job).
	ids *idgen.Generator
	rec recorder

	mu   sync.Mutex
	jobs []*dispatch.Job // as created; guarded by mu
}

// recorder collects what the goroutines saw, for the final checks.
type recorder struct {
	mu sync.Mutex
	// claims are the versions the successful claims of each job produced.
	claims map[string][]int64
	// writes are the versions the verbs that reported a write produced.
	writes map[string][]int64
	// completed holds the jobs seen COMPLETED.
	completed map[string]bool
	steps     int
	verbs     map[string]int
}

func (r *recorder) claim(id string, v int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.claims[id] = append(r.claims[id], v)
	r.writes[id] = append(r.writes[id], v)
}

func (r *recorder) wrote(j *dispatch.Job) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes[j.ID] = append(r.writes[j.ID], j.Version)
	if j.Status == dispatch.StatusCompleted {
		r.completed[j.ID] = true
	}
}

func (r *recorder) saw(j *dispatch.Job) {
	if j.Status != dispatch.StatusCompleted {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.completed[j.ID] = true
}

func newWorld(t *testing.T, st lifecycleStore, seed uint64) *world {
	t.Helper()
	start := time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC)
	clk := clocktest.New(start)
	q := memqueue.New(memqueue.Config{NowFunc: clk.Now})
	t.Cleanup(func() { require.NoError(t, q.Close()) })
	w := &world{
		st: st, q: q, clk: clk, seed: seed, batches: batches(), ids: idgen.New(clk.Now),
		rec: recorder{claims: map[string][]int64{}, writes: map[string][]int64{}, completed: map[string]bool{}, verbs: map[string]int{}},
	}
	logger := slog.New(slog.NewTextHandler(tLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// The instances' clocks disagree by tens of milliseconds, so the ids
	// of a job's status events come from generators that are not in step.
	for i, skew := range []time.Duration{0, 40 * time.Millisecond, -25 * time.Millisecond}[:randInstances] {
		now := func() time.Time { return clk.Now().Add(skew) }
		var mu sync.Mutex
		rnd := rand.New(rand.NewPCG(seed, uint64(1000+i)))
		w.instances = append(w.instances, &instance{
			worker: fmt.Sprintf("w%d", i), now: now,
			lc: dispatch.NewLifecycle(dispatch.LifecycleConfig{
				Store: st, Queue: q, NewID: idgen.New(now).New, NowFunc: now,
				RandFunc: func() float64 {
					mu.Lock()
					defer mu.Unlock()
					return rnd.Float64()
				},
				BlockedRecheck: randRecheck, PausedRecheck: randRecheck, Logger: logger,
			}),
		})
	}
	w.createJobs(t, rand.New(rand.NewPCG(seed, 0)))
	return w
}

// batches are the kinds of jobs of the run: ordered groups of both modes,
// pushed and pulled, and unordered jobs.
func batches() []batch {
	return []batch{
		{"sub-block", dispatch.ModeBlockOnError, dispatch.DeliveryPush, "b1"},
		{"sub-block", dispatch.ModeBlockOnError, dispatch.DeliveryPush, "b2"},
		{"sub-block-pull", dispatch.ModeBlockOnError, dispatch.DeliveryPull, "b3"},
		{"sub-next", dispatch.ModeNextOnError, dispatch.DeliveryPush, "n1"},
		{"sub-next-pull", dispatch.ModeNextOnError, dispatch.DeliveryPull, "n2"},
		{"sub-free", dispatch.ModeImmediate, dispatch.DeliveryPush, ""},
		{"sub-free", dispatch.ModeImmediate, dispatch.DeliveryPush, ""},
		{"sub-free-pull", dispatch.ModeImmediate, dispatch.DeliveryPull, ""},
	}
}

// createJobs creates the run's first jobs through the first instance:
// randInitialJobs of each batch.
func (w *world) createJobs(t *testing.T, rnd *rand.Rand) {
	t.Helper()
	seen := map[string]bool{}
	for _, b := range w.batches {
		if !seen[b.sub] {
			w.subs = append(w.subs, b.sub)
			seen[b.sub] = true
		}
		if b.group != "" {
			w.groups = append(w.groups, group{sub: b.sub, name: b.sub + ":" + b.group})
		}
		for range randInitialJobs {
			j := w.newJob(rnd, b, w.clk.Now())
			require.NoError(t, w.instances[0].lc.Create(t.Context(), []*dispatch.Job{j}))
			w.addJob(j)
		}
	}
}

// newJob builds a job of batch b at now, as the API builds a TASK job.
func (w *world) newJob(rnd *rand.Rand, b batch, now time.Time) *dispatch.Job {
	s := dispatch.Settings{
		SubscriptionID: b.sub, Subscription: b.sub, Target: "http://127.0.0.1:9/hook",
		Mode: b.mode, Delivery: b.delivery, MaxAgeSeconds: []int{60, 600, 3600, 3600}[rnd.IntN(4)],
		Retry: dispatch.Retry{MaxAttempts: 2 + rnd.IntN(3), InitialBackoffSeconds: 1, MaxBackoffSeconds: 8},
	}
	if b.group == "" && rnd.IntN(4) == 0 {
		s.DelaySeconds = 5
	}
	spec := &dispatch.TaskSpec{ID: w.ids.New(), Code: "order.created", Payload: []byte(`{}`), Settings: s}
	if b.group != "" {
		spec.MessageGroup = b.sub + ":" + b.group
	}
	return dispatch.NewTaskJob(spec, now.UTC().Truncate(time.Millisecond))
}

func (w *world) addJob(j *dispatch.Job) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.jobs = append(w.jobs, j)
}

// created returns the jobs created so far.
func (w *world) created() []*dispatch.Job {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clip(w.jobs)
}

// run lets the actors loose and waits for them.
func (w *world) run(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(randBudget)
	var wg sync.WaitGroup
	for i, in := range w.instances {
		for g := range randActorsEach {
			a := &actor{
				w: w, in: in, t: t, name: fmt.Sprintf("%s/%d", in.worker, g),
				rnd:  rand.New(rand.NewPCG(w.seed, uint64(i*randActorsEach+g+1))),
				seen: map[string]int64{},
			}
			wg.Go(func() { a.loop(t.Context(), deadline) })
		}
	}
	wg.Wait()
	t.Logf("%d steps, clock at +%s, verbs %v", w.rec.steps, w.clk.Now().Sub(time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC)), w.rec.verbs)
}

// actor is one goroutine of an instance: a router worker, a pull worker,
// a poller and an operator in turn.
type actor struct {
	w  *world
	in *instance
	t  *testing.T
	// name is the actor's name, and its worker id as a pull worker (as a
	// router it claims under its instance's worker id, shared with the
	// instance's other actors).
	name string
	rnd  *rand.Rand
	// held are the claims this actor made and has not settled.
	held []*dispatch.Job
	// seen is the highest version of each job this actor read.
	seen map[string]int64
}

type verb struct {
	name   string
	weight int
	do     func(ctx context.Context)
}

func (a *actor) verbs() []verb {
	return []verb{
		{"create", 4, a.create},
		{"route", 14, a.route},
		{"claim", 4, a.claim},
		{"pull", 8, a.pull},
		{"settle", 14, a.settle},
		{"heartbeat", 3, a.heartbeat},
		{"handBack", 2, a.handBack},
		{"crash", 1, func(context.Context) { a.held = nil }},
		{"park", 2, a.park},
		{"parkPaused", 2, a.parkPaused},
		{"holdForOrder", 3, a.holdForOrder},
		{"send", 2, a.send},
		{"retry", 4, a.retry},
		{"cancel", 3, a.cancel},
		{"queueDue", 6, a.queueDue},
		{"rescueStale", 2, a.rescueStale},
		{"rescueExpired", 4, a.rescueExpired},
		{"releaseGroup", 3, a.releaseGroup},
		{"releaseSubscription", 1, a.releaseSubscription},
		{"advance", 8, a.advance},
		{"get", 3, func(ctx context.Context) { a.get(ctx, a.pick().ID) }},
	}
}

// loop runs random verbs until the step bound or the deadline, then
// settles the claims the actor still holds (a crashed actor's claims were
// dropped: they are left to the rescuer).
func (a *actor) loop(ctx context.Context, deadline time.Time) {
	vs := a.verbs()
	total := 0
	for _, v := range vs {
		total += v.weight
	}
	counts := map[string]int{}
	steps := 0
	for ; steps < randMaxSteps && time.Now().Before(deadline); steps++ {
		n := a.rnd.IntN(total)
		for _, v := range vs {
			if n < v.weight {
				counts[v.name]++
				v.do(ctx)
				break
			}
			n -= v.weight
		}
	}
	for len(a.held) > 0 {
		a.settle(ctx)
	}
	a.w.rec.mu.Lock()
	defer a.w.rec.mu.Unlock()
	a.w.rec.steps += steps
	for k, v := range counts {
		a.w.rec.verbs[k] += v
	}
}

// fail reports an unexpected error of a verb.
func (a *actor) fail(verb, jobID string, err error) {
	a.t.Errorf("%s: %s of job %s: unexpected error: %v", a.name, verb, jobID, err)
}

// ok reports whether err is nil; an error not among allowed fails the test.
func (a *actor) ok(verb, jobID string, err error, allowed ...error) bool {
	if err == nil {
		return true
	}
	for _, e := range allowed {
		if errors.Is(err, e) {
			return false
		}
	}
	a.fail(verb, jobID, err)
	return false
}

// advance moves the shared clock on: often by less than the instances'
// clocks differ, so that moves of one job by several instances fall in one
// millisecond of one clock or another (see dispatch.Job.StatusEvent); else
// by up to randAdvanceMax, so that leases, delays and retry waits pass.
func (a *actor) advance(context.Context) {
	limit := randAdvanceMax
	if a.rnd.IntN(2) == 0 {
		limit = randSkewMax
	}
	a.w.clk.Advance(time.Duration(a.rnd.Int64N(int64(limit))))
}

// pick returns a random job of the run.
func (a *actor) pick() *dispatch.Job {
	jobs := a.w.created()
	return jobs[a.rnd.IntN(len(jobs))]
}

// create creates a job of a random batch through the actor's instance, as
// ingest does, until the run has randMaxJobs.
func (a *actor) create(ctx context.Context) {
	if len(a.w.created()) >= randMaxJobs {
		return
	}
	j := a.w.newJob(a.rnd, a.w.batches[a.rnd.IntN(len(a.w.batches))], a.in.now())
	if a.ok("create", j.ID, a.in.lc.Create(ctx, []*dispatch.Job{j})) {
		a.w.addJob(j)
	}
}

// get reads a job, checking that its version never goes back.
func (a *actor) get(ctx context.Context, id string) *dispatch.Job {
	j, err := a.in.lc.Get(ctx, id)
	if err != nil {
		a.fail("get", id, err)
		return nil
	}
	a.observe(j)
	return j
}

// observe checks a job state the actor got against the versions it saw.
func (a *actor) observe(j *dispatch.Job) {
	if j.Version < a.seen[j.ID] {
		a.t.Errorf("%s: job %s went back from version %d to %d", a.name, j.ID, a.seen[j.ID], j.Version)
	}
	a.seen[j.ID] = max(a.seen[j.ID], j.Version)
	a.w.rec.saw(j)
}

func (a *actor) lease() time.Duration {
	return randLeaseShortest + time.Duration(a.rnd.Int64N(int64(randLeaseSpread)))
}

// outcome returns a random outcome of a push attempt.
func (a *actor) outcome() dispatch.Outcome {
	n := a.rnd.IntN(100)
	switch {
	case n < 30:
		return succeeded()
	case n < 65:
		return retryable()
	case n < 80:
		return dispatch.Outcome{
			Attempted: true, Attempt: dispatch.Attempt{StatusCode: 429},
			Err: dispatch.RetryAfter(time.Duration(a.rnd.IntN(10))*time.Second, errors.New("429 Too Many Requests")),
		}
	case n < 95:
		return permanent()
	default:
		return notAttempted()
	}
}

// anyInstance returns a random instance's lifecycle: pull workers reach
// the gateway through a load balancer, so their claim, heartbeats and
// report may each go to another instance.
func (a *actor) anyInstance() *dispatch.Lifecycle {
	return a.w.instances[a.rnd.IntN(len(a.w.instances))].lc
}

// doClaim claims j (as read) for this actor and keeps the claim: as its
// instance's router for a push job, as the pull worker a.name through any
// instance for a pull job.
func (a *actor) doClaim(ctx context.Context, j *dispatch.Job) {
	lc, p := a.in.lc, dispatch.ClaimParams{Worker: a.in.worker, Lease: a.lease()}
	if j.Delivery == dispatch.DeliveryPull {
		lc, p.Worker, p.Pull = a.anyInstance(), a.name, true
	}
	err := lc.Claim(ctx, j, p)
	if !a.ok("claim", j.ID, err, dispatch.ErrClaimLost, dispatch.ErrExpired, store.ErrConflict) {
		return
	}
	a.w.rec.claim(j.ID, j.Version)
	a.observe(j)
	a.held = append(a.held, j)
}

// route is a router taking one message off the queue, as router.process
// does: the order gate, the claim, then the delivery's outcome now, later,
// or never (handed back).
func (a *actor) route(ctx context.Context) {
	msgs, err := a.w.q.Receive(ctx, queue.ReceiveParams{Max: 1})
	if err != nil {
		a.fail("receive", "", err)
		return
	}
	for _, m := range msgs {
		c, err := dispatch.ReadMessage(m.Body)
		if err != nil {
			a.fail("read message", string(m.Body), err)
			continue
		}
		a.routeOne(ctx, c.JobID)
		if err := a.w.q.Delete(ctx, m.ReceiptHandle); err != nil {
			a.fail("delete message", c.JobID, err)
		}
	}
}

func (a *actor) routeOne(ctx context.Context, id string) {
	j := a.get(ctx, id)
	if j == nil || j.Status != dispatch.StatusQueued || j.Delivery == dispatch.DeliveryPull {
		return
	}
	held, err := a.in.lc.HoldForOrder(ctx, j)
	if !a.ok("hold for order", id, err, dispatch.ErrKeepMessage) || held {
		return
	}
	a.doClaim(ctx, j)
	if len(a.held) == 0 || a.held[len(a.held)-1] != j {
		return
	}
	switch n := a.rnd.IntN(10); {
	case n < 6:
		a.held = a.held[:len(a.held)-1]
		a.record(ctx, j)
	case n < 7:
		a.held = a.held[:len(a.held)-1]
		a.ok("hand back", id, a.in.lc.HandBack(ctx, j, "router shutting down"))
	}
}

// record records a random outcome of the push claim j.
func (a *actor) record(ctx context.Context, j *dispatch.Job) {
	got, err := a.in.lc.RecordOutcome(ctx, j, a.outcome())
	if a.ok("record outcome", j.ID, err, dispatch.ErrLeaseLost, store.ErrConflict) {
		a.observe(got)
	}
}

// claim claims a random job directly: a router racing the one that got
// the message, or a pull worker.
func (a *actor) claim(ctx context.Context) {
	if j := a.get(ctx, a.pick().ID); j != nil && j.Status == dispatch.StatusQueued {
		a.claimPull(ctx, j)
	}
}

// pull is a pull worker's claim, as pull.Service.Claim makes it: the due
// QUEUED pull jobs, one per ordered group and only behind the order gate.
func (a *actor) pull(ctx context.Context) {
	due, err := a.w.st.JobListDue(ctx, &dispatch.JobListDueParams{
		Status: dispatch.StatusQueued, Now: a.in.now(), Limit: 5, Delivery: dispatch.DeliveryPull,
	})
	if err != nil {
		a.fail("list due pull jobs", "", err)
		return
	}
	groups := map[string]bool{}
	for _, j := range due {
		if j.MessageGroup != "" {
			if groups[j.MessageGroup] {
				continue
			}
			groups[j.MessageGroup] = true
		}
		a.observe(j)
		a.claimPull(ctx, j)
	}
}

// claimPull claims the QUEUED job j (as read), behind the order gate when
// it is a pull job; a quick pull worker then reports at once, within the
// same millisecond of the shared clock, likely through another instance.
func (a *actor) claimPull(ctx context.Context, j *dispatch.Job) {
	pull := j.Delivery == dispatch.DeliveryPull
	if pull {
		ok, err := a.anyInstance().Claimable(ctx, j)
		if !a.ok("claimable", j.ID, err) || !ok {
			return
		}
	}
	a.doClaim(ctx, j)
	if n := len(a.held); n > 0 && a.held[n-1] == j && pull && a.rnd.IntN(2) == 0 {
		a.held = a.held[:n-1]
		a.report(ctx, j)
	}
}

// takeHeld removes and returns a random claim the actor holds.
func (a *actor) takeHeld() *dispatch.Job {
	if len(a.held) == 0 {
		return nil
	}
	i := a.rnd.IntN(len(a.held))
	j := a.held[i]
	a.held = append(a.held[:i], a.held[i+1:]...)
	return j
}

// settle ends one held claim: a push outcome, or a pull worker's report.
func (a *actor) settle(ctx context.Context) {
	j := a.takeHeld()
	if j == nil {
		return
	}
	if j.Delivery != dispatch.DeliveryPull {
		a.record(ctx, j)
		return
	}
	a.report(ctx, j)
}

// report reports on the pull claim j as its worker: completed, failed, or
// failed for good.
func (a *actor) report(ctx context.Context, j *dispatch.Job) {
	action, o := dispatch.ActionCompleted, succeeded()
	switch a.rnd.IntN(6) {
	case 0, 1:
		action, o = dispatch.ActionFailed, retryable()
	case 2:
		action, o = dispatch.ActionFailed, permanent()
	}
	got, repeat, err := a.anyInstance().Report(ctx, j.ID, a.name, action, o)
	if a.ok("report", j.ID, err, dispatch.ErrNotHolder, dispatch.ErrInvalidTransition, store.ErrConflict) {
		a.observe(got)
		if !repeat {
			a.w.rec.wrote(got)
		}
	}
}

// heartbeat extends a held pull claim, or tries one on a random job.
func (a *actor) heartbeat(ctx context.Context) {
	id := a.pick().ID
	for _, j := range a.held {
		if j.Delivery == dispatch.DeliveryPull {
			id = j.ID
			break
		}
	}
	j, err := a.anyInstance().Heartbeat(ctx, id, a.name, a.lease())
	if a.ok("heartbeat", id, err, dispatch.ErrNotHolder, store.ErrConflict) {
		a.observe(j)
		a.w.rec.wrote(j)
	}
}

// handBack hands a held push claim back.
func (a *actor) handBack(ctx context.Context) {
	for i, j := range a.held {
		if j.Delivery != dispatch.DeliveryPull {
			a.held = append(a.held[:i], a.held[i+1:]...)
			a.ok("hand back", j.ID, a.in.lc.HandBack(ctx, j, "router shutting down"))
			return
		}
	}
}

// readPush reads a random push job.
func (a *actor) readPush(ctx context.Context) *dispatch.Job {
	j := a.pick()
	if j.Delivery == dispatch.DeliveryPull {
		return nil
	}
	return a.get(ctx, j.ID)
}

// A park refused while the job stayed unchanged (on FerretDB: another
// writer held the job's write guard, its own write not yet visible) is
// ErrKeepMessage: the router keeps the message and tries again later.
func (a *actor) park(ctx context.Context) {
	if j := a.readPush(ctx); j != nil {
		until := a.in.now().Add(time.Duration(a.rnd.IntN(10)) * time.Second)
		a.ok("park", j.ID, a.in.lc.Park(ctx, j, dispatch.ParkParams{Until: until, Reason: "random park"}), dispatch.ErrKeepMessage)
	}
}

func (a *actor) parkPaused(ctx context.Context) {
	if j := a.readPush(ctx); j != nil {
		a.ok("park paused", j.ID, a.in.lc.ParkPaused(ctx, j), dispatch.ErrKeepMessage)
	}
}

func (a *actor) holdForOrder(ctx context.Context) {
	if j := a.readPush(ctx); j != nil && j.Status == dispatch.StatusQueued {
		_, err := a.in.lc.HoldForOrder(ctx, j)
		a.ok("hold for order", j.ID, err, dispatch.ErrKeepMessage)
	}
}

func (a *actor) send(ctx context.Context) {
	if j := a.readPush(ctx); j != nil {
		_, err := a.in.lc.Send(ctx, []*dispatch.Job{j})
		a.ok("send", j.ID, err)
	}
}

func (a *actor) retry(ctx context.Context) {
	id := a.pick().ID
	j, err := a.in.lc.Retry(ctx, id)
	if a.ok("retry", id, err, dispatch.ErrInvalidTransition, store.ErrConflict) {
		a.observe(j)
		a.w.rec.wrote(j)
	}
}

func (a *actor) cancel(ctx context.Context) {
	id := a.pick().ID
	j, err := a.in.lc.Cancel(ctx, id, "cancelled by an operator")
	if a.ok("cancel", id, err, dispatch.ErrInvalidTransition, store.ErrConflict) {
		a.observe(j)
		a.w.rec.wrote(j)
	}
}

func (a *actor) queueDue(ctx context.Context) {
	_, _, err := a.in.lc.QueueDue(ctx, dispatch.QueueDueParams{Limit: 20})
	a.ok("queue due", "", err)
}

func (a *actor) rescueStale(ctx context.Context) {
	_, _, err := a.in.lc.RescueStale(ctx, dispatch.RescueParams{Before: a.in.now().Add(-30 * time.Second), Limit: 20})
	a.ok("rescue stale", "", err)
}

func (a *actor) rescueExpired(ctx context.Context) {
	_, _, err := a.in.lc.RescueExpired(ctx, dispatch.RescueParams{Before: a.in.now(), Limit: 20})
	a.ok("rescue expired", "", err)
}

func (a *actor) releaseGroup(ctx context.Context) {
	g := a.w.groups[a.rnd.IntN(len(a.w.groups))]
	_, err := a.in.lc.ReleaseGroup(ctx, g.sub, g.name)
	a.ok("release group", g.name, err)
}

func (a *actor) releaseSubscription(ctx context.Context) {
	sub := a.w.subs[a.rnd.IntN(len(a.w.subs))]
	_, err := a.in.lc.ReleaseSubscription(ctx, sub)
	a.ok("release subscription", sub, err)
}

// batch is a kind of job the run creates.
type batch struct {
	sub      string
	mode     dispatch.Mode
	delivery dispatch.Delivery
	// group names the batch's message group; "" for unordered jobs.
	group string
}
