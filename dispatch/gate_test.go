package dispatch_test

import (
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/clocktest"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/queue/memqueue"
	"github.com/hooklane/hooklane/storage/sqlitestore"
)

// recordingAdmitter is a caller's admission that admits while room is
// true and counts what the gated claim asked of it.
type recordingAdmitter struct {
	room            bool
	tries, unadmits int
}

func (a *recordingAdmitter) TryAdmit() bool {
	a.tries++
	return a.room
}

func (a *recordingAdmitter) Unadmit() { a.unadmits++ }

// gateEnv is a lifecycle on a real store whose circuits open at the first
// retryable failure, with a clock the test moves.
type gateEnv struct {
	st    *sqlitestore.Store
	lc    *dispatch.Lifecycle
	clock *clocktest.Clock
	ids   *idgen.Generator
}

const gateCooldown = time.Minute

func newGateEnv(t *testing.T) *gateEnv {
	t.Helper()
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: filepath.Join(t.TempDir(), "gate.db")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	q := memqueue.New(memqueue.Config{})
	t.Cleanup(func() { require.NoError(t, q.Close()) })
	clock := clocktest.New(time.Now().UTC().Truncate(time.Millisecond))
	ids := idgen.New(clock.Now)
	lc := dispatch.NewLifecycle(dispatch.LifecycleConfig{
		Store: st, Queue: q, NewID: ids.New, NowFunc: clock.Now, Logger: slog.New(slog.DiscardHandler),
		Circuit: dispatch.CircuitPolicy{Store: st, Failures: 1, Cooldown: gateCooldown, CleanTTL: -1},
	})
	return &gateEnv{st: st, lc: lc, clock: clock, ids: ids}
}

// job stores a QUEUED push job of sub-1; a group makes it BLOCK_ON_ERROR.
func (e *gateEnv) job(t *testing.T, group string) *dispatch.Job {
	t.Helper()
	j := circuitTestJob(e.ids.New(), e.clock.Now())
	if group != "" {
		j.Mode, j.MessageGroup = dispatch.ModeBlockOnError, group
	}
	require.NoError(t, e.lc.Insert(t.Context(), []*dispatch.Job{j}))
	return j
}

func (e *gateEnv) stored(t *testing.T, id string) *dispatch.Job {
	t.Helper()
	j, err := e.st.JobGetByID(t.Context(), id)
	require.NoError(t, err)
	return j
}

// openCircuit opens sub-1's circuit: a job claimed and failed with a 503.
func (e *gateEnv) openCircuit(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	j := e.job(t, "")
	require.NoError(t, e.lc.Claim(ctx, j, dispatch.ClaimParams{Worker: "w", Lease: time.Minute}))
	_, err := e.lc.RecordOutcome(ctx, j, dispatch.Outcome{Attempted: true, Err: errors.New("HTTP 503"), Attempt: dispatch.Attempt{StatusCode: 503}})
	require.NoError(t, err)
	c, err := e.lc.Circuit(ctx, "sub-1")
	require.NoError(t, err)
	require.Equal(t, dispatch.CircuitOpen, c.State)
}

func gate(admit dispatch.Admitter) dispatch.GateParams {
	return dispatch.GateParams{Claim: dispatch.ClaimParams{Worker: "w", Lease: time.Minute}, Admit: admit}
}

// The gated claim runs its gates in their order — order gate, admission,
// circuit gate, claim — and gives back an admission it does not use. Each
// case fails if two gates change places: a job its group holds is never
// admitted; a job with no room never touches the circuit (it would take
// the probe slot); a job the circuit parks gives its room back.
func TestClaimGatedRunsItsGatesInOrder(t *testing.T) {
	t.Parallel()

	t.Run("held by its group: not admitted", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		e := newGateEnv(t)
		head := e.job(t, "g")
		held := e.job(t, "g")
		e.openCircuit(t) // the circuit gate would park it too
		adm := &recordingAdmitter{room: true}
		res, err := e.lc.ClaimGated(ctx, held, gate(adm))
		require.NoError(t, err)
		require.Equal(t, dispatch.GateHeldByOrder, res)
		require.Zero(t, adm.tries, "the order gate runs before the admission")
		got := e.stored(t, held.ID)
		require.Equal(t, dispatch.StatusPending, got.Status)
		require.Equal(t, head.ID, got.BlockedBy, "parked by the order gate, not the circuit")
	})

	t.Run("no room: the circuit's probe is not taken", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		e := newGateEnv(t)
		e.openCircuit(t)
		e.clock.Advance(gateCooldown + time.Second) // the probe is due
		j := e.job(t, "")
		adm := &recordingAdmitter{room: false}
		res, err := e.lc.ClaimGated(ctx, j, gate(adm))
		require.NoError(t, err)
		require.Equal(t, dispatch.GateBusy, res)
		require.Equal(t, 1, adm.tries)
		require.Zero(t, adm.unadmits, "nothing taken, nothing given back")
		c, err := e.lc.Circuit(ctx, "sub-1")
		require.NoError(t, err)
		require.Equal(t, dispatch.CircuitOpen, c.State, "the admission runs before the circuit gate")
		require.Empty(t, c.ProbeJobID)
		require.Equal(t, dispatch.StatusQueued, e.stored(t, j.ID).Status, "the job is not touched")

		// With room, the same job takes the probe and is claimed, its
		// room kept for the delivery.
		adm.room = true
		res, err = e.lc.ClaimGated(ctx, j, gate(adm))
		require.NoError(t, err)
		require.Equal(t, dispatch.GateClaimed, res)
		require.Zero(t, adm.unadmits, "a claimed job keeps its room")
		c, err = e.lc.Circuit(ctx, "sub-1")
		require.NoError(t, err)
		require.Equal(t, dispatch.CircuitHalfOpen, c.State)
		require.Equal(t, j.ID, c.ProbeJobID)
		require.Equal(t, dispatch.StatusInProgress, e.stored(t, j.ID).Status)
	})

	t.Run("parked by the circuit: room given back", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		e := newGateEnv(t)
		e.openCircuit(t)
		j := e.job(t, "")
		adm := &recordingAdmitter{room: true}
		res, err := e.lc.ClaimGated(ctx, j, gate(adm))
		require.NoError(t, err)
		require.Equal(t, dispatch.GateHeldByCircuit, res)
		require.Equal(t, 1, adm.tries, "admitted before the circuit gate")
		require.Equal(t, 1, adm.unadmits, "the room of a parked job is given back")
		got := e.stored(t, j.ID)
		require.Equal(t, dispatch.StatusPending, got.Status)
		require.Equal(t, dispatch.BlockedByCircuit, got.BlockedBy)
	})
}

// A lost claim says why, and gives its room back: a snapshot older than
// the store is stale (read it again), a job another writer moved is lost,
// and a job past its max age is discarded.
func TestClaimGatedLostClaims(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newGateEnv(t)

	j := e.job(t, "")
	snapshot := *j
	fresh := e.stored(t, j.ID)
	require.NoError(t, e.lc.Park(ctx, fresh, dispatch.ParkParams{Until: e.clock.Now()}))
	_, _, err := e.lc.QueueDue(ctx, dispatch.QueueDueParams{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, dispatch.StatusQueued, e.stored(t, j.ID).Status, "queued again under a newer version")

	adm := &recordingAdmitter{room: true}
	p := gate(adm)
	p.Snapshot = true
	stale := snapshot
	res, err := e.lc.ClaimGated(ctx, &stale, p)
	require.NoError(t, err)
	require.Equal(t, dispatch.GateStale, res)

	moved := snapshot
	res, err = e.lc.ClaimGated(ctx, &moved, gate(adm))
	require.NoError(t, err)
	require.Equal(t, dispatch.GateLost, res)
	require.Equal(t, 2, adm.unadmits, "each lost claim gave its room back")

	old := e.job(t, "")
	e.clock.Advance(2 * time.Hour) // past its max age (1 h)
	res, err = e.lc.ClaimGated(ctx, e.stored(t, old.ID), gate(adm))
	require.NoError(t, err)
	require.Equal(t, dispatch.GateExpired, res)
	require.Equal(t, 3, adm.unadmits)
	require.Equal(t, dispatch.StatusError, e.stored(t, old.ID).Status)
}

// A pull claim's order gate holds a job behind a job of its group in
// flight, whatever their order, and leaves it QUEUED (nothing parked).
func TestClaimGatedPull(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newGateEnv(t)
	pullJob := func() *dispatch.Job {
		t.Helper()
		j := circuitTestJob(e.ids.New(), e.clock.Now())
		j.Mode, j.MessageGroup, j.Delivery = dispatch.ModeBlockOnError, "g", dispatch.DeliveryPull
		require.NoError(t, e.lc.Insert(ctx, []*dispatch.Job{j}))
		return j
	}
	first, second := pullJob(), pullJob()
	p := dispatch.GateParams{Claim: dispatch.ClaimParams{Worker: "w", Lease: time.Minute, Pull: true}}

	res, err := e.lc.ClaimGated(ctx, e.stored(t, second.ID), p)
	require.NoError(t, err)
	require.Equal(t, dispatch.GateHeldByOrder, res)
	require.Equal(t, dispatch.StatusQueued, e.stored(t, second.ID).Status, "a pull job is not parked")

	res, err = e.lc.ClaimGated(ctx, first, p)
	require.NoError(t, err)
	require.Equal(t, dispatch.GateClaimed, res)
	require.Equal(t, dispatch.StatusInProgress, e.stored(t, first.ID).Status)
}
