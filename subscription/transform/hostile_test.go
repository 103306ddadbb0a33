package transform

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// heapPeak samples the live heap objects every 200µs until stop is closed,
// and returns the highest value seen above the value at the start.
func heapPeak(stop <-chan struct{}) <-chan uint64 {
	res := make(chan uint64, 1)
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	base := read()
	go func() {
		peak := base
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				res <- peak - base
				return
			case <-tick.C:
				peak = max(peak, read())
			}
		}
	}()
	return res
}

// A run that allocates without end is stopped with a memory error well
// before its time limit, and the process's heap stays within the documented
// bound. Not parallel: it measures the whole process's heap, so it runs
// alone.
func TestRunMemory(t *testing.T) { //nolint:paralleltest // measures the process's heap: nothing else may run
	const maxMemory = 64 << 20
	// The bound of doc.go for one run: MaxMemory, plus one guarded
	// built-in's result (MaxMemory/16 bytes, twice while it is copied),
	// plus what a run allocates in one watchdog interval, plus the garbage
	// the collector has not yet reclaimed (GOGC=100 lets the heap double).
	const bound = 3 * maxMemory
	e := New(Config{MaxMemory: maxMemory, Timeout: 60 * time.Second})
	for _, body := range []string{
		`var a = []; for (var i = 0; ; i++) a.push({i: i, s: "item " + i});`,
		`var s = "x"; while (true) s += s;`,
		`var a = [], s = "x".repeat(1 << 20); for (;;) a.push(s + a.length);`,
		`var a = []; for (;;) a.push(new Array(1000).fill(a.length));`,
		`var o = {}; for (var i = 0; ; i++) o["k" + i] = [i];`,
		`var a = [], s = "y".repeat(1 << 20); for (;;) a.push(JSON.stringify([s]));`,
	} {
		runtime.GC()
		stop := make(chan struct{})
		peak := heapPeak(stop)
		start := time.Now()
		_, err := run(t, e, "function handler(w) { "+body+" }", sampleInput())
		elapsed := time.Since(start)
		close(stop)
		grew := <-peak
		t.Logf("%-70s %v, heap grew %d MiB", body, elapsed.Round(time.Millisecond), grew>>20)
		requireRunError(t, err, KindMemory, "allocated more than")
		require.Less(t, elapsed, 30*time.Second, "stopped by memory, long before the time limit")
		require.Less(t, grew, uint64(bound), "the heap stays bounded")
	}
}

// The built-ins that would loop or allocate without end inside one Go call
// (where goja's interrupt does not reach) fail fast with a RangeError, or
// the run is stopped by its limits; none hangs the run or blows the heap.
// Not parallel, and its cases one at a time: they allocate up to the
// bounds, which the watchdog would count against concurrent runs.
func TestRunGuardedBuiltins(t *testing.T) { //nolint:paralleltest // allocates up to the bounds: runs alone
	e := New(Config{MaxMemory: 64 << 20, Timeout: 20 * time.Second})
	tests := []struct{ name, body string }{
		{"repeat", `return {payload: "x".repeat(1 << 30)}`},
		{"padStart", `"x".padStart(1 << 30)`},
		{"padEnd", `"x".padEnd(1 << 30)`},
		{"indexOf on a huge array-like", `Array.prototype.indexOf.call({length: 2 ** 53 - 1}, 1)`},
		{"join of a huge sparse array", `var a = []; a.length = 4294967295; a.join(",")`},
		{"toString of a huge sparse array", `var a = []; a.length = 4294967295; String(a)`},
		{"stringify a huge sparse array", `var a = []; a.length = 1e8; JSON.stringify(a)`},
		{"Array.from", `Array.from({length: 1e8})`},
		{"fill", `new Array(1e8).fill(0)`},
		{"apply", `String.fromCharCode.apply(null, {length: 1e8})`},
		{"spread", `var a = []; a.length = 1e8; [...a]`},
		{"spread into a call", `var a = []; a.length = 1e8; Math.max(...a)`},
		{"join one string many times", `var s = "x".repeat(1e6), a = []; for (var i = 0; i < 10000; i++) a.push(s); a.join("")`},
		{"stringify one string many times", `var s = "x".repeat(1e6), a = []; for (var i = 0; i < 10000; i++) a.push(s); JSON.stringify(a)`},
		{"stringify a deep value", `var o = {}; for (var i = 0; i < 5000; i++) o = {a: o}; JSON.stringify(o)`},
		{"replace with the prefix", "'a'.repeat(1e5).replace(/a/g, '$`')"},
		{"replace with a function", `var s = "x".repeat(1e6); "a".repeat(1e5).replace(/a/g, function () { return s })`},
		{"replaceAll", `var s = "x".repeat(1e6); "a".repeat(1e5).replaceAll("a", s)`},
		{"concat", `var s = "x".repeat(4e6); "".concat(s, 1, s, 2, s)`},
		{"sort", `var a = []; a.length = 1e8; a.sort()`},
		{"reverse", `var a = []; a.length = 1e8; a.reverse()`},
		{"concat arrays", `var a = []; a.length = 1e6; a.concat(a, a, a)`},
		{"split", `"x".repeat(4e6).split("")`},
		{"spread a string", `[..."x".repeat(4e6)]`},
		{"deep join", `var a = []; for (var i = 0; i < 5000; i++) a = [a]; String(a)`},
		{"JSON.parse deep", `JSON.parse("[".repeat(1e6))`},
		{"Function constructor", `(function () {}).constructor("return 1")()`},
		{"generator constructor", `(function* () {}).constructor("yield 1")`},
	}
	for _, tt := range tests { //nolint:paralleltest // one case at a time (see above)
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := run(t, e, "function handler(w) { "+tt.body+" }", sampleInput())
			require.Less(t, time.Since(start), 10*time.Second)
			var re *RunError
			require.ErrorAs(t, err, &re)
			if re.Kind == KindMemory {
				return // what the call allocated before its guard tripped passed the bound (the race detector's allocations count)
			}
			require.Equal(t, KindThrow, re.Kind, re.Error())
			require.Regexp(t, "RangeError|TypeError", re.Message)
		})
	}
}

// A hostile run does not stop runs on other runtimes: with one runtime busy
// with an endless loop, another still answers.
func TestRunHostileDoesNotStallOthers(t *testing.T) {
	t.Parallel()
	e := New(Config{PoolSize: 2, Timeout: 5 * time.Second, MaxMemory: 1 << 30})
	loop, err := Compile(`function handler(w) { while (true) {} }`)
	require.NoError(t, err)
	ok, err := Compile(`function handler(w) { return {payload: 1} }`)
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Go(func() {
		_, err := e.Run(t.Context(), loop, sampleInput())
		requireRunError(t, err, KindTimeout, "")
	})
	for e.active() == 0 {
		runtime.Gosched()
	}
	start := time.Now()
	out, err := e.Run(t.Context(), ok, sampleInput())
	require.NoError(t, err)
	require.Equal(t, "1", string(out.Payload))
	require.Less(t, time.Since(start), 4*time.Second, "answered while the loop still runs")
	wg.Wait()
}
