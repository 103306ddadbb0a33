package transform

import (
	"context"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/dop251/goja"
)

// allocsMetric is the process's cumulative heap allocation: it only grows, so
// its difference over a run's lifetime bounds what the run allocated.
const allocsMetric = "/gc/heap/allocs:bytes"

// kindMemorySuspect interrupts a run that shared the process with other runs
// while the process allocated past the bound: any of them may have done it,
// so the run is not failed but run again alone (Engine.Run). It is never a
// RunError's kind.
const kindMemorySuspect Kind = "memory_suspect"

// kindStarved interrupts a run past its wall limit: the run's RunError is a
// KindTimeout that says so.
const kindStarved Kind = "starved"

// kindWhole interrupts a run whose handler asked a lazily built payload
// object for what only a plain object can do: the run is run again on an
// input built whole. It is never a RunError's kind.
const kindWhole Kind = "whole"

// watchdog interrupts runs that pass their time limit or allocate past their
// bound, or whose caller's context ended. Its goroutine runs only while some run is active.
type watchdog struct {
	mu       sync.Mutex
	active   map[*watched]struct{}
	watching bool
	// allocs is the process's allocation read at allocsAt, by the watch
	// or a run's begin: a run that begins less than WatchdogInterval
	// later counts from it (see begin).
	allocs   uint64
	allocsAt time.Time
}

// watchLinger is how long the watchdog's goroutine goes on ticking with no
// run active before it ends, so that runs in a steady stream do not each
// start it again.
const watchLinger = 100 * time.Millisecond

// watched is one run under watch.
type watched struct {
	rt *goja.Runtime
	// ctx is the run's caller's: once it ends, the run is interrupted as a
	// timeout.
	ctx       context.Context //nolint:containedctx // the watch's lifetime is the run's call
	timeout   time.Duration   // of the run's own CPU time (wall time without a thread clock)
	wallLimit time.Duration   // of wall time, whatever the CPU time
	maxMemory uint64
	exclusive bool // the run holds every slot: what the process allocates is its

	// Set by begin, on the run's locked OS thread.
	clock    threadClock
	hasClock bool
	// cpu0 is the thread's CPU time when the run began, as the watch's
	// first look at the run puts it (overTime); cpuSeen once it has.
	cpu0    time.Duration
	cpuSeen bool
	start   time.Time
	allocs0 uint64

	shared  bool // another run was active during this one
	stopped bool // interrupted once; not again
	ended   bool // stop was called: begin must not register it
}

func readAllocs() uint64 {
	s := []metrics.Sample{{Name: allocsMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// begin starts watching r. It is called on the run's goroutine, locked to its
// OS thread, so the thread's CPU clock is the run's.
//
// The run counts its allocation from the watchdog's last reading when that
// is less than WatchdogInterval old (and the run is not exclusive): it is
// never more than the allocation when the run began, so the run is charged
// at most what the process allocated in that interval besides its own — a
// bound the watchdog's tick already allows — and the reading (runtime
// metrics, a few µs) is taken once per interval instead of once per run.
func (w *watchdog) begin(r *watched) {
	r.clock, r.hasClock = currentThreadClock()
	r.start = time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if r.ended {
		return
	}
	if r.exclusive || r.start.Sub(w.allocsAt) >= WatchdogInterval {
		w.allocs, w.allocsAt = readAllocs(), r.start
	}
	r.allocs0 = w.allocs
	if w.active == nil {
		w.active = make(map[*watched]struct{})
	}
	for o := range w.active {
		o.shared, r.shared = true, true
	}
	w.active[r] = struct{}{}
	if !w.watching {
		w.watching = true
		go w.watch()
	}
}

// stop stops watching r.
func (w *watchdog) stop(r *watched) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r.ended = true
	delete(w.active, r)
}

// resume clears r's runtime's interrupt so that the run can go on, unless the
// watchdog has interrupted r (then it reports false and the interrupt
// stands). The watch stays as it was: the time limit goes on counting.
func (w *watchdog) resume(r *watched) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r.stopped || r.ended {
		return false
	}
	r.rt.ClearInterrupt()
	return true
}

// watch checks the active runs every WatchdogInterval until none has been
// active for watchLinger.
func (w *watchdog) watch() {
	tick := time.NewTicker(WatchdogInterval)
	defer tick.Stop()
	var idleSince time.Time
	for range tick.C {
		now := time.Now()
		switch {
		case w.check(now):
			idleSince = time.Time{}
		case idleSince.IsZero():
			idleSince = now
		case now.Sub(idleSince) >= watchLinger && w.end():
			return
		}
	}
}

// end ends the watch unless a run has begun since its last check; it
// reports whether it did.
func (w *watchdog) end() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.active) > 0 {
		return false
	}
	w.watching = false
	return true
}

// check interrupts the runs past their time limit or memory bound; it
// reports whether any run is active.
func (w *watchdog) check(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.active) == 0 {
		return false
	}
	allocs := readAllocs()
	w.allocs, w.allocsAt = allocs, now
	for r := range w.active {
		switch {
		case r.stopped:
		case r.ctx != nil && r.ctx.Err() != nil:
			r.stopped = true
			r.rt.Interrupt(KindTimeout)
		case allocs-r.allocs0 > r.maxMemory:
			r.stopped = true
			if r.shared && !r.exclusive {
				r.rt.Interrupt(kindMemorySuspect)
			} else {
				r.rt.Interrupt(KindMemory)
			}
		case now.Sub(r.start) > r.wallLimit:
			r.stopped = true
			r.rt.Interrupt(kindStarved)
		case r.overTime(now):
			r.stopped = true
			r.rt.Interrupt(KindTimeout)
		}
	}
	return true
}

// overTime reports whether r has run longer than its limit: its thread's CPU
// time past timeout (its wall time without a thread clock).
func (r *watched) overTime(now time.Time) bool {
	wall := now.Sub(r.start)
	if !r.hasClock {
		return wall > r.timeout
	}
	cpu, ok := r.clock.now()
	if !ok {
		return wall > r.timeout
	}
	if !r.cpuSeen {
		// The first look at the run, at most an interval after it began
		// unless the watch itself was held off the CPU: what the run ran
		// before it is taken as its wall time so far, at most one
		// interval. Reading the clock here rather than in begin spares
		// every run a system call; most runs end before the first look.
		r.cpu0, r.cpuSeen = cpu-min(wall, WatchdogInterval), true
	}
	return cpu-r.cpu0 > r.timeout
}
