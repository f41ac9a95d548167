// Floor 5 (maintenance) of package scaling: Flush: checksums, the sync and
// disk_seqnum.

package scaling

import (
	"fmt"
	"sync/atomic"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/seqnum"
)

// Flush makes everything written so far, by every handle and process, durable
// (msync and fsync of the whole file). If no modification was in flight
// anywhere while it synced, it also marks the file clean: disk_seqnum becomes
// mem_seqnum. Otherwise the data is durable but the file stays marked dirty,
// because a concurrent writer may already have changed it again.
//
// A failed sync is returned, and from then on this handle never marks the
// file clean (the kernel may have dropped the pages it failed to write).
func (f *Filter) Flush() error {
	for {
		f = f.settled()
		if err := f.flush(); !f.again(err) {
			return err
		}
	}
}

func (f *Filter) flush() error {
	g, err := f.enterFlush()
	if err != nil {
		return err
	}
	defer g.n.Add(-1)
	unlockGrowth, unlock, err := f.w.lockFlush(f)
	if err != nil {
		return err
	}
	defer unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.chain.Load() == nil { // closed while waiting for the lock
		return ErrClosed
	}
	size := f.r.Size()
	k := knob(f.tk)
	ep, clean, ok := f.words.BeginFlush()
	if !ok && !clean && !k.FlushNoTakeOver {
		// Flushing while this flush holds the flush lock: the flush that
		// set it was killed. Take it over (I3).
		ep, ok = f.words.TakeOverFlush()
	}
	if !ok {
		// Already clean, or a writer is marking the file dirty: sync,
		// claim nothing.
		return f.sync(0, size)
	}
	step := k.FlushStep
	if step == nil {
		step = func(string) {}
	}
	step("begun")
	if done, err := f.settleCutShort(ep, size); done {
		return err
	}
	return f.claimClean(ep, size, unlockGrowth, step)
}

// enterFlush registers a flush like a modification, so that Close (or a
// move to the file that replaced this one) does not close the descriptor
// while the flush waits for its locks; the caller releases the guard.
func (f *Filter) enterFlush() (*guard, error) {
	if f.ro && !f.closed.Load() {
		return nil, ErrReadOnly // (not after waiting for a rewrite or an exclusive writer)
	}
	if atomic.LoadUint64(f.replaced) != header.ReplaceNone {
		// A rewrite holds the file (see Freeze): flush what follows it.
		if err := f.waitReplace(); err != nil {
			return nil, err
		}
	}
	g, err := f.enter(2)
	if err != nil {
		return nil, err
	}
	if f.syncFailed.Load() {
		g.n.Add(-1)
		return nil, ErrSyncFailed
	}
	return g, nil
}

// claimClean is the flush of epoch ep from its phase flushing on (I3):
// the records read, then the page checksums, under the growth lock
// (unlockGrowth releases it), the file synced, and the claim of clean,
// which fails if a record was in flight or a writer re-marked the file.
//
// The records come before the checksums. A writer whose change lands
// after the take read its page either read the state word before
// BeginFlush froze the writers, and then its record was in flight from
// before that read until after its change (I2: the record is published
// before the dirty check, and goes idle after the change and its mark),
// so the read of the records, after BeginFlush, finds it in flight or
// finds it idle after its change, which then precedes the take; or it
// read the state word after, found it flushing (or clean, in a new
// epoch) and marked the file dirty again, which fails the claim. So a
// file that reads clean has every page's checksum right. The other
// order missed a writer that finished between the take and the read
// of the records, and claimed clean over its page's old checksum
// (TestCleanFlushReadsRecordsBeforeSums).
func (f *Filter) claimClean(ep uint64, size int64, unlockGrowth func(), step func(string)) error {
	mem, busy := f.recordTotals()
	if busy {
		f.words.AbortFlush(ep)
		unlockGrowth()
		return f.sync(0, size)
	}
	// The checksums of the pages changed since the last flush (version
	// 1.4), from the chain as published now: a filter another process
	// published and wrote must not keep its marks past a clean flush.
	if err := f.takeSums(); err != nil {
		f.words.AbortFlush(ep)
		return err
	}
	unlockGrowth() // the blocks of the filters may move again
	step("taken")
	if err := f.sync(0, size); err != nil {
		f.words.AbortFlush(ep)
		return err
	}
	step("synced")
	if !f.words.EndFlush(ep, mem) {
		return nil
	}
	step("ended")
	h := header.HotAt(f.hot)
	atomic.AddUint64(&h.FlushCount, 1)
	atomic.StoreUint64(&h.CleanBootID, header.BootIDWords(f.bootID)[0])
	if err := f.sync(header.HotOffset, header.PageSize); err != nil {
		// The clean state may not be durable: withdraw the claim.
		if atomic.CompareAndSwapUint64(f.words.State, seqnum.Pack(ep+1, seqnum.Clean), seqnum.Pack(ep+1, seqnum.Dirty)) {
			atomic.StoreUint64(f.words.Disk, 0)
		}
		return fmt.Errorf("recording the clean state: %w", err)
	}
	return nil
}

// lockFlush takes the file's flush lock: one flush at a time per file,
// across handles and processes (I3). The lock is the descriptor's, so
// flushMu serialises this handle's flushes. Both are taken before mu
// (I17).
//
// First it takes the growth lock shared (growMu first: the handle's
// goroutines share its descriptor's lock), in the order of lockFreeze
// (growth, then flush), and unlockGrowth releases it once the checksums
// are taken: a growth or retirement, which holds it exclusively, cannot
// place a filter in released space or release a filter's blocks while
// takeSums reads pages and stores their checksums (a store into a hole
// would allocate it again, or fault on a full disk; one into reused
// space would clobber the new filter's checksums).
func (sharedWriter) lockFlush(f *Filter) (unlockGrowth, unlock func(), err error) {
	if f.file == nil {
		return func() {}, func() {}, nil
	}
	f.growMu.Lock()
	if err := f.file.Lock(header.GrowthLockOffset, false, f.timeout); err != nil {
		f.growMu.Unlock()
		return nil, nil, fmt.Errorf("growth lock (shared, for the page checksums): %w", err)
	}
	grown := false
	unlockGrowth = func() {
		if !grown {
			grown = true
			f.file.Unlock(header.GrowthLockOffset)
			f.growMu.Unlock()
		}
	}
	f.flushMu.Lock()
	if err := f.file.Lock(header.FlushLockOffset, true, f.timeout); err != nil {
		f.flushMu.Unlock()
		unlockGrowth()
		return nil, nil, fmt.Errorf("flush lock: %w", err)
	}
	unlock = func() {
		f.file.Unlock(header.FlushLockOffset)
		f.flushMu.Unlock()
		unlockGrowth()
	}
	if atomic.LoadUint64(f.replaced) != header.ReplaceNone {
		unlock()
		return nil, nil, errRetry // a rewrite began meanwhile: wait for it (see flush)
	}
	return unlockGrowth, unlock, nil
}

// recordTotals reads the op word of every record of every slot once: the
// operations completed through them (mem_seqnum's sum) and whether any is in
// flight, live or dead.
func (f *Filter) recordTotals() (completed uint64, inFlight bool) {
	for s := 0; s < header.NumSlots; s++ {
		for r := 0; r < header.RecordsPerSlot; r++ {
			op := header.OpWord(atomic.LoadUint64(&header.RecordAt(f.hot, s, r).Op))
			completed += op.Completed()
			inFlight = inFlight || op.InFlight()
		}
	}
	return completed, inFlight
}

// MemSeqnum returns mem_seqnum: the number of modifications completed on the
// file by every handle, or 0 while one is in progress or was interrupted.
func (f *Filter) MemSeqnum() uint64 {
	f = f.settled()
	g, err := f.enter(0)
	if err != nil {
		return 0
	}
	defer g.n.Add(-1)
	mem, busy := f.recordTotals()
	return seqnum.Mem([]uint64{mem}, busy)
}

// DiskSeqnum returns disk_seqnum: the mem_seqnum at the last durable Flush
// that marked the file clean, or 0 if it has changed since.
func (f *Filter) DiskSeqnum() uint64 {
	f = f.settled()
	g, err := f.enter(1)
	if err != nil {
		return 0
	}
	defer g.n.Add(-1)
	return f.words.DiskSeqnum()
}

// takeSums stores the checksums of every changed page of the published
// chain's filters (Flush, under mu, before it syncs).
func (f *Filter) takeSums() error {
	c := f.chain.Load()
	if c == nil {
		return ErrClosed
	}
	if f.chainStale(c) {
		m, _, err := f.readPublished()
		if err != nil {
			return err
		}
		if err := f.loadChain(m); err != nil {
			return err
		}
		c = f.chain.Load()
	}
	if f.sumBuf == nil {
		f.sumBuf = new([pageWords]uint64)
	}
	k := knob(f.tk)
	t := &taker{buf: f.sumBuf, readFirst: k.PageSumsReadFirst, step: k.FlushStep}
	if !k.FlushTakeUnrecorded {
		t.taking = &header.HotAt(f.hot).Taking
		if w := atomic.LoadUint64(t.taking); w != 0 {
			c.remark(w)
		}
	}
	for _, m := range c.f {
		if !m.gone() {
			// (A retired filter's blocks are being released: a store
			// into them would allocate them again.)
			m.ps.take(t, m.idx)
		}
	}
	if t.taking != nil && atomic.LoadUint64(t.taking) != 0 {
		atomic.StoreUint64(t.taking, 0)
	}
	return nil
}
