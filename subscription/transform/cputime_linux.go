//go:build linux

package transform

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadClock is the CPU-time clock of one OS thread: what the run on that
// thread has executed, not how long it waited for a CPU.
type threadClock struct {
	id int32
}

// currentThreadClock is the clock of the calling goroutine's OS thread; the
// caller holds runtime.LockOSThread while the clock is read. It reads the
// thread's id only (one cheap system call); the clock is read by now.
func currentThreadClock() (c threadClock, ok bool) {
	// clockid for another thread of the process: the kernel's
	// MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED), ~tid<<3 | PERTHREAD | SCHED.
	return threadClock{id: int32(^unix.Gettid()<<3 | 6)}, true //nolint:gosec // G115: a thread id fits the kernel's 32-bit clockid encoding
}

// now is the thread's CPU time so far.
func (c threadClock) now() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(c.id, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
