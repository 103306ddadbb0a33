package transform

import (
	"cmp"
	"runtime"
	"time"
)

func runtimeGosched() { runtime.Gosched() }

// testEngine is an engine with a time limit generous enough for the race
// detector (which slows goja tenfold), for the tests that are not about time.
func testEngine(cfg Config) *Engine {
	cfg.Timeout = cmp.Or(cfg.Timeout, 20*time.Second)
	return New(cfg)
}
