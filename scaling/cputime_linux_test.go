package scaling

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// threadCPU returns the calling thread's CPU time in ns, or -1.
func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return -1
	}
	return ts.Nano()
}

// cpuTimer reports a benchmark's thread CPU time per operation as the
// metric cpu-ns/op beside its wall time: a shared machine's load moves it
// less. start locks the goroutine to its thread; stop reports.
type cpuTimer struct{ t0, sum int64 }

func (c *cpuTimer) start() {
	runtime.LockOSThread()
	c.t0 = threadCPU()
}

func (c *cpuTimer) stop(b *testing.B) { c.stopN(b, 1) }

// stopN is stop for b.N iterations of n operations each: it reports
// cpu-ns/key, the CPU time of every span timed since the first start.
func (c *cpuTimer) stopN(b *testing.B, n int) {
	t1 := threadCPU()
	runtime.UnlockOSThread()
	if c.t0 < 0 || t1 < 0 || b.N == 0 {
		return
	}
	c.sum += t1 - c.t0
	if n == 1 {
		b.ReportMetric(float64(c.sum)/float64(b.N), "cpu-ns/op")
	} else {
		b.ReportMetric(float64(c.sum)/float64(b.N*n), "cpu-ns/key")
	}
}
