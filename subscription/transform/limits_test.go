package transform

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// busyHandler loops without allocating (its numbers stay below 256, which Go
// boxes without allocating): CPU work the test can size.
const busyHandler = `function handler(w) {
	var s = 0;
	for (var a = 0; a < 3; a++) for (var j = 0; j < 200; j++) for (var k = 0; k < 200; k++) s ^= k;
	return {payload: s};
}`

// runErrors collects the errors of runs made on other goroutines, where a
// test cannot fail (require there would not stop the test).
type runErrors struct {
	mu   sync.Mutex
	errs []error
}

func (r *runErrors) add(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
}

// requireKind checks that every run collected failed with kind.
func (r *runErrors) requireKind(t *testing.T, kind Kind, contains string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.NotEmpty(t, r.errs)
	for _, err := range r.errs {
		requireRunError(t, err, kind, contains)
	}
}

// spin keeps n goroutines busy on every CPU until stop is closed (or a
// minute has passed): the scheduler then holds any run off its CPU most of
// the time.
func spin(n int, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	end := time.Now().Add(time.Minute)
	for range n {
		wg.Go(func() {
			x := 0
			for time.Now().Before(end) {
				select {
				case <-stop:
					return
				default:
				}
				for range 10000 {
					x++
				}
			}
			_ = x
		})
	}
	return &wg
}

// Whatever its CPU time, a run is stopped at its wall limit: a run held off
// the CPU still frees its runtime.
func TestRunWallLimit(t *testing.T) {
	t.Parallel()
	e := New(Config{Timeout: time.Hour, WallLimit: 100 * time.Millisecond, MaxMemory: 1 << 30})
	start := time.Now()
	_, err := run(t, e, `function handler(w) { while (true) {} }`, sampleInput())
	requireRunError(t, err, KindTimeout, "longer than 100ms of wall time")
	require.Less(t, time.Since(start), time.Minute, "stopped long before its hour of CPU")
}

// The memory bound stops the run that allocates: beside endless-allocation
// handlers, a handler that allocates little succeeds every time, though the
// process allocates past the bound while it runs, and each allocator fails
// with kind memory. Not parallel: the watchdog counts the process's
// allocation.
func TestRunMemoryStopsTheAllocator(t *testing.T) { //nolint:paralleltest // the watchdog counts the whole process's allocation: runs alone
	const maxMemory = 32 << 20
	prog, err := Compile(busyHandler)
	require.NoError(t, err)
	hog, err := Compile(`function handler(w) { var a = [], s = "x".repeat(1 << 16); for (var i = 0; ; i++) a.push(s + i) }`)
	require.NoError(t, err)
	e := New(Config{Timeout: time.Minute, MaxMemory: maxMemory, PoolSize: 4})

	// Alone, the good handler allocates well under the bound and takes long
	// enough for an allocator to pass the bound while it runs.
	runtime.GC()
	a0, start := readAllocs(), time.Now()
	_, err = e.Run(t.Context(), prog, sampleInput())
	require.NoError(t, err)
	alone, took := readAllocs()-a0, time.Since(start)
	require.Less(t, alone, uint64(maxMemory/4), "the good handler alone allocates little")
	a0, start = readAllocs(), time.Now()
	_, err = e.Run(t.Context(), hog, sampleInput())
	requireRunError(t, err, KindMemory, "allocated more than")
	t.Logf("alone: the good handler %s, %d KiB; an allocator stopped after %s, %d MiB", took, alone>>10, time.Since(start), (readAllocs()-a0)>>20)

	stop := make(chan struct{})
	var hogs sync.WaitGroup
	var hogErrs runErrors
	for range 2 {
		hogs.Go(func() {
			for range 100 {
				select {
				case <-stop:
					return
				default:
				}
				_, err := e.Run(t.Context(), hog, sampleInput())
				hogErrs.add(err)
			}
		})
	}
	var during uint64
	for range 5 {
		a0 := readAllocs()
		_, err := e.Run(t.Context(), prog, sampleInput())
		during = max(during, readAllocs()-a0)
		require.NoError(t, err, "the good handler was stopped beside the allocators")
	}
	close(stop)
	hogs.Wait()
	hogErrs.requireKind(t, KindMemory, "allocated more than")
	t.Logf("beside two allocators: the process allocated up to %d MiB during one good Run (bound %d MiB)", during>>20, maxMemory>>20)
}
