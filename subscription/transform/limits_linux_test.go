//go:build linux

package transform

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The thread CPU-time clock the limit reads exists on Linux only
// (cputime_linux.go); elsewhere the limit is wall time, and this test has
// nothing to check.

// The time limit counts the run's own CPU time, not the time it waits for a
// CPU: with every CPU saturated (two spinning goroutines per CPU, and
// endless loops on two of the engine's other runtimes), a handler whose work takes a
// third of the limit passes every time, though the wall time of its runs is
// many times the limit; the endless loops beside it still time out. Not
// parallel: it saturates the CPUs.
func TestRunTimeLimitCountsTheRunNotTheWait(t *testing.T) { //nolint:paralleltest // saturates every CPU: runs alone
	c, ok := currentThreadClock()
	require.True(t, ok, "Linux offers every thread a CPU-time clock")
	_, ok = c.now()
	require.True(t, ok, "the thread's clock reads")
	prog, err := Compile(busyHandler)
	require.NoError(t, err)
	loop, err := Compile(`function handler(w) { while (true) {} }`)
	require.NoError(t, err)

	// Calibrate on the idle engine: the fastest of three runs.
	calib := New(Config{Timeout: time.Minute, MaxMemory: 1 << 30})
	base := time.Hour
	for range 3 {
		start := time.Now()
		_, err := calib.Run(t.Context(), prog, sampleInput())
		require.NoError(t, err)
		base = min(base, time.Since(start))
	}
	limit := max(3*base, 20*time.Millisecond)
	// The wall limit is out of the way: under the race detector on a loaded
	// machine, runs were held off the CPU for 30 times their CPU time.
	e := New(Config{Timeout: limit, WallLimit: 10 * time.Minute, PoolSize: 4, MaxMemory: 1 << 30})
	t.Logf("the handler alone: %s; limit %s, wall limit %s", base, limit, e.cfg.WallLimit)

	stop := make(chan struct{})
	spinners := spin(2*runtime.GOMAXPROCS(0), stop)
	var hostile sync.WaitGroup
	var loops runErrors
	for range 2 {
		hostile.Go(func() {
			for range 100 {
				select {
				case <-stop:
					return
				default:
				}
				_, err := e.Run(t.Context(), loop, sampleInput())
				loops.add(err)
			}
		})
	}
	var slowest time.Duration
	for range 3 {
		start := time.Now()
		out, err := e.Run(t.Context(), prog, sampleInput())
		slowest = max(slowest, time.Since(start))
		require.NoError(t, err, "a good handler failed under load (slowest run so far %s, limit %s)", slowest, limit)
		require.NotEmpty(t, out.Payload)
	}
	close(stop)
	spinners.Wait()
	hostile.Wait()
	loops.requireKind(t, KindTimeout, "longer than")
	t.Logf("under load: slowest good run %s (wall), limit %s of CPU", slowest, limit)
}

// The watch reads a run's thread clock first when it first looks at the
// run: the time before counts as the run's own up to one interval only, so a
// run that waited long for the CPU before the first look is not charged the
// wait; what it runs after is charged in full.
func TestOverTimeCountsFromTheFirstLook(t *testing.T) {
	t.Parallel()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, ok := currentThreadClock()
	require.True(t, ok)
	r := &watched{timeout: 20 * time.Millisecond, clock: c, hasClock: true, start: time.Now().Add(-time.Second)}
	require.False(t, r.overTime(time.Now()), "a second of wall time before the first look is not the run's")
	first, ok := c.now()
	require.True(t, ok)
	for {
		now, ok := c.now()
		require.True(t, ok)
		if now-first > 25*time.Millisecond {
			break
		}
	}
	require.True(t, r.overTime(time.Now()), "25 ms of the thread's CPU after the first look pass a 20-ms limit")
}
