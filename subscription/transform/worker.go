package transform

import (
	"sync/atomic"
	"time"
)

// workerLinger is how long a sandbox's worker goroutine waits for its next
// run before it ends: long enough that a steady stream of deliveries keeps
// it (and the stack it has grown), short enough that an idle engine leaves
// no goroutine behind for long (between one and two lingers after its last
// run).
const workerLinger = 100 * time.Millisecond

// States of a sandbox's worker.
const (
	workerNone int32 = iota // no worker goroutine: the next run starts one
	workerIdle              // the worker waits for a run and may end
	workerBusy              // a run is handed over or running: the worker stays
)

// worker is the goroutine that runs a pooled sandbox's runs, one at a time.
// Keeping it from run to run spares each run a goroutine start and the
// growth of a fresh goroutine's stack to goja's depth. The engine still
// waits for a run apart from the goroutine running it, so that a run stuck
// in one built-in call can be abandoned (Engine.runOnce).
type worker struct {
	state atomic.Int32
	// dead is set when the engine abandoned the run in progress: the
	// worker ends after it.
	dead atomic.Bool
	jobs chan func() outcome // a nil job ends the worker
	done chan outcome
	// abandon is the engine's timer of a run's longest wait, kept with the
	// sandbox (only the run's caller uses it).
	abandon *time.Timer
}

func newWorker() worker {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return worker{jobs: make(chan func() outcome, 1), done: make(chan outcome, 1), abandon: t}
}

// start hands f to the worker, starting one when there is none; f's
// outcome arrives on done. The caller owns the sandbox: no other run is
// handed over until it has read done.
func (w *worker) start(f func() outcome) {
	if !w.state.CompareAndSwap(workerIdle, workerBusy) {
		w.state.Store(workerBusy)
		go w.work()
	}
	w.jobs <- f
}

// retire ends the worker of a sandbox that will not be used again. The
// caller owns the sandbox.
func (w *worker) retire() {
	select {
	case w.jobs <- nil:
	default:
	}
}

// work runs the jobs handed over until it is retired, its run was
// abandoned, or it waited a whole linger with no run.
func (w *worker) work() {
	t := time.NewTimer(workerLinger)
	defer t.Stop()
	used := false
	for {
		select {
		case f := <-w.jobs:
			if f == nil {
				return
			}
			res := f()
			used = true
			if w.dead.Load() {
				w.done <- res
				return
			}
			// Idle before the outcome is handed back: once the caller
			// has it, the sandbox may be handed the next run at once.
			w.state.Store(workerIdle)
			w.done <- res
		case <-t.C:
			if !used && w.state.CompareAndSwap(workerIdle, workerNone) {
				return
			}
			used = false
			t.Reset(workerLinger)
		}
	}
}
