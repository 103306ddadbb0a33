package transform

import (
	"cmp"
	"runtime"
	"time"
)

func runtimeGosched() { runtime.Gosched() }

// testEngine is an engine with a time limit generous enough for the race
// detector (which slows goja tenfold) and a memory bound the parallel tests'
// allocations cannot reach together (the watchdog counts the whole
// process's), for the tests that are about neither.
func testEngine(cfg Config) *Engine {
	cfg.Timeout = cmp.Or(cfg.Timeout, 20*time.Second)
	cfg.MaxMemory = cmp.Or(cfg.MaxMemory, 1<<30)
	return New(cfg)
}

// active is how many runs the watchdog is watching.
func (e *Engine) active() int {
	e.wd.mu.Lock()
	defer e.wd.mu.Unlock()
	return len(e.wd.active)
}
