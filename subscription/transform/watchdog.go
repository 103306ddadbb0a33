package transform

import (
	"runtime/metrics"
	"sync"
	"time"

	"github.com/dop251/goja"
)

// allocsMetric is the process's cumulative heap allocation: it only grows, so
// its difference over a run's lifetime bounds what the run allocated.
const allocsMetric = "/gc/heap/allocs:bytes"

// watchdog interrupts runs that pass their deadline or allocate past their
// bound. Its goroutine runs only while some run is active.
type watchdog struct {
	mu       sync.Mutex
	active   map[*watched]struct{}
	watching bool
}

// watched is one active run.
type watched struct {
	rt        *goja.Runtime
	deadline  time.Time
	allocs0   uint64
	maxMemory uint64
	stopped   bool // interrupted once; not again
}

func readAllocs() uint64 {
	s := []metrics.Sample{{Name: allocsMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// start registers a run and makes sure the watchdog goroutine runs.
func (w *watchdog) start(rt *goja.Runtime, timeout time.Duration, maxMemory int64) *watched {
	r := &watched{rt: rt, deadline: time.Now().Add(timeout), allocs0: readAllocs(), maxMemory: uint64(maxMemory)} //nolint:gosec // G115: maxMemory is positive (Config defaults)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.active == nil {
		w.active = make(map[*watched]struct{})
	}
	w.active[r] = struct{}{}
	if !w.watching {
		w.watching = true
		go w.watch()
	}
	return r
}

// stop unregisters a run.
func (w *watchdog) stop(r *watched) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.active, r)
}

// watch checks the active runs every WatchdogInterval until none is left.
func (w *watchdog) watch() {
	tick := time.NewTicker(WatchdogInterval)
	defer tick.Stop()
	for range tick.C {
		if !w.check() {
			return
		}
	}
}

// check interrupts the runs past their deadline or memory bound; it reports
// whether any run is still active.
func (w *watchdog) check() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.active) == 0 {
		w.watching = false
		return false
	}
	now, allocs := time.Now(), readAllocs()
	for r := range w.active {
		switch {
		case r.stopped:
		case allocs-r.allocs0 > r.maxMemory:
			r.stopped = true
			r.rt.Interrupt(KindMemory)
		case now.After(r.deadline):
			r.stopped = true
			r.rt.Interrupt(KindTimeout)
		}
	}
	return true
}
