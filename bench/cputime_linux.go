package main

import "golang.org/x/sys/unix"

// threadCPU returns the calling thread's CPU time in ns
// (CLOCK_THREAD_CPUTIME_ID), or -1 if it cannot be read. Callers lock
// the goroutine to its thread around what they measure.
func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return -1
	}
	return ts.Nano()
}
