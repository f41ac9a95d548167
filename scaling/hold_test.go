package scaling

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// overlapCheck is a critical section that notices company: enter and
// leave count the goroutines inside, and a goroutine that enters beside
// another is counted in overlaps. n is changed with plain loads and stores
// inside, so that the race detector also sees a hold that does not order
// one holder's section before the next.
type overlapCheck struct {
	inside   atomic.Int32
	overlaps atomic.Int64
	n        int
}

func (c *overlapCheck) section(work func()) {
	if c.inside.Add(1) != 1 {
		c.overlaps.Add(1)
	}
	c.n++
	if work != nil {
		work()
	}
	c.n++
	c.inside.Add(-1)
}

// TestHoldExcludes runs short and long holds of one hold from many
// goroutines, the long ones yielding and sleeping inside as a Flush's
// sync does: no two sections may overlap, and every increment of the
// plain counter must be there at the end (under -race: no race report).
func TestHoldExcludes(t *testing.T) {
	var h hold
	var c overlapCheck
	const goroutines, rounds = 8, 2000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range rounds {
				if (g+i)%50 == 0 {
					h.lock()
					c.section(func() {
						runtime.Gosched()
						if i%200 == 0 {
							time.Sleep(50 * time.Microsecond)
						}
					})
					h.unlock()
					continue
				}
				lined := h.lockOp()
				c.section(nil)
				h.unlockOp(lined)
			}
		})
	}
	wg.Wait()
	if o := c.overlaps.Load(); o != 0 {
		t.Errorf("%d sections overlapped another", o)
	}
	if want := 2 * goroutines * rounds; c.n != want {
		t.Errorf("the plain counter is %d, want %d", c.n, want)
	}
}

// TestHoldOverlapCheckCatches is TestHoldExcludes's negative control: two
// sections made to overlap, without the hold, are counted.
func TestHoldOverlapCheckCatches(t *testing.T) {
	var c overlapCheck
	in, out, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		c.section(func() { close(in); <-out })
		close(done)
	}()
	<-in
	// A second section's entry while the first is inside (its plain
	// counter left alone: the race detector would report that, rightly).
	if c.inside.Add(1) != 1 {
		c.overlaps.Add(1)
	}
	c.inside.Add(-1)
	close(out)
	<-done
	if c.overlaps.Load() != 1 {
		t.Errorf("overlaps = %d, want 1", c.overlaps.Load())
	}
}

// TestHoldLongNotStarved takes holds through line and short holds while
// another goroutine takes short holds back to back, as a loop of single
// Adds does: each must get its turn, and once nobody is queued the fast
// hold is back.
func TestHoldLongNotStarved(t *testing.T) {
	var h hold
	var stop atomic.Bool
	var spun atomic.Int64
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for !stop.Load() {
			lined := h.lockOp()
			spun.Add(1)
			h.unlockOp(lined)
		}
	}()
	for spun.Load() == 0 {
		runtime.Gosched()
	}
	deadline := time.Now().Add(time.Minute)
	for i := range 400 {
		if i%2 == 0 {
			h.lock()
			h.unlock()
		} else {
			lined := h.lockOp()
			h.unlockOp(lined)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d holds in a minute beside a loop of short holds", i)
		}
	}
	stop.Store(true)
	<-stopped
	h.lock()
	h.unlock()
	if atomic.LoadUint32(&h.busy) != 0 {
		t.Error("busy still set with nobody queued")
	}
	if lined := h.lockOp(); lined {
		t.Error("an uncontended lockOp went through line")
	} else {
		h.unlockOp(lined)
	}
}

// TestHoldWaitersSleepThroughLongHold holds h long while goroutines wait
// for short holds: they queue on line (they do not take state when the
// long hold ends before the goroutine that queued first), and all get it.
func TestHoldWaitersSleepThroughLongHold(t *testing.T) {
	var h hold
	h.lock()
	var got atomic.Int32
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			lined := h.lockOp()
			got.Add(1)
			h.unlockOp(lined)
		})
	}
	time.Sleep(20 * time.Millisecond)
	if n := got.Load(); n != 0 {
		t.Fatalf("%d short holds taken during a long hold", n)
	}
	if h.line.TryLock() {
		t.Fatal("line is free during a long hold")
	}
	h.unlock()
	wg.Wait()
	if got.Load() != 4 {
		t.Errorf("%d of 4 short holds taken", got.Load())
	}
	if !h.line.TryLock() {
		t.Fatal("line still held with no hold left")
	}
	h.line.Unlock()
	if atomic.LoadUint64(&h.state) != 0 {
		t.Error("state still held with no hold left")
	}
}
