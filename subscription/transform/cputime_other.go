//go:build !linux

package transform

import "time"

// threadClock is a thread's CPU-time clock, which this platform does not
// offer: the watchdog measures wall time instead.
type threadClock struct{}

// currentThreadClock reports that no thread clock is available.
func currentThreadClock() (c threadClock, ok bool) { return threadClock{}, false }

// now is never called without a clock.
func (threadClock) now() (time.Duration, bool) { return 0, false }
