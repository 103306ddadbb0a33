//go:build !linux

package transform

import "time"

// threadClock is a thread's CPU-time clock, which this platform does not
// offer: the watchdog measures wall time instead.
type threadClock struct{}

// currentThreadClock reports that no thread clock is available.
func currentThreadClock() (c threadClock, now time.Duration, ok bool) { return threadClock{}, 0, false }

// now is never called without a clock.
func (threadClock) now() (time.Duration, bool) { return 0, false }
