// Floor 3 (the file's coordination) of package scaling: the ways to stop
// writers, and the growth lock.

package scaling

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/mmapfile"
)

// Stopping writers: the ways, one name each (docs/PROTOCOLS.md, "Stopping
// writers"). Every one rests on publish-then-check (I2): on the writer's
// side each is one check, at the gate step of an Add or a Remove (ops.go).
//
//   - Flush phase (flush.go; seqnum calls it freezing writers), I3: a
//     writer that reads Flushing goes back to Marking (ensureDirty), so it
//     stops writers only while it marks the file dirty.
//   - Retirement (retire.go), I13: the hot retired word, then waitRecords
//     for the retired filters' entries; their writers start over on the
//     new chain (retryGone).
//   - Freeze (freeze, below), I14: the hot replaced word at
//     ReplaceFreezing, under the growth and flush locks; writers wait
//     (waitReplace) until the word changes. Two holders use it: a
//     whole-file rewrite (Freeze, until Done or Abort; replace.go) and the
//     exclusive writer (takeExclusive, until Close; exclusive.go; I18),
//     which alone reads its own replaced word (noReplace). A dead holder's
//     word is thawed by the next holder of the growth lock (thaw,
//     successor.go).
//   - Hold (writer.holdOps), I18: the exclusive writer's mutex wmu, which
//     stops the handle's own goroutines while its Flush, RetireBefore or
//     Close runs: their records are not published in order (exclWriter).
//   - Closed-file rewrite, I21: a file before version 1.3 is rewritten only
//     while no handle has it open (header.OpenLockOffset, taken by the
//     rewrite in recover).
//
// Close (shutdown) does not stop other writers; it waits for its own
// handle's operations (their guards), then holds them (above).

// lockFreeze takes the growth lock and then the flush lock of mf (a flush
// changes the state words a rewrite copies) for a freeze, waiting up to
// wait for each. If one was held for longer it returns ErrLockTimeout and
// which ("growth" or "flush").
func lockFreeze(mf *mmapfile.File, wait time.Duration) (unlock func(), held string, err error) {
	if err := mf.Lock(header.GrowthLockOffset, true, wait); err != nil {
		return nil, "growth", err
	}
	if err := mf.Lock(header.FlushLockOffset, true, wait); err != nil {
		mf.Unlock(header.GrowthLockOffset)
		return nil, "flush", err
	}
	return func() {
		mf.Unlock(header.FlushLockOffset)
		mf.Unlock(header.GrowthLockOffset)
	}, "", nil
}

// freeze stops every writer of the file (I14, see above), f holding the
// locks of lockFreeze: it stores ReplaceFreezing and waits until no live
// writer has an operation in flight (a dead writer's records stay, for
// Repair). If they do not finish within the lock timeout it stores
// ReplaceNone again and returns ErrLockTimeout.
func (f *Filter) freeze() error {
	return mmapfile.Guard(func() error {
		atomic.StoreUint64(f.replaced, header.ReplaceFreezing)
		if _, err := f.waitRecords(^uint64(0)); err != nil {
			atomic.StoreUint64(f.replaced, header.ReplaceNone)
			return err
		}
		return nil
	})
}

// waitRecords waits until no live handle has an operation in flight on a
// filter in one of the directory entries of the mask slots, and returns
// the entries that a dead writer's record (which waits for Repair) still
// names. It gives up with ErrLockTimeout after the lock timeout.
func (f *Filter) waitRecords(slots uint64) (dead uint64, err error) {
	deadline := time.Now().Add(f.timeout)
	delay := 10 * time.Microsecond
	for {
		busy := false
		dead = 0
		for s := 0; s < header.NumSlots; s++ {
			for rec := 0; rec < header.RecordsPerSlot; rec++ {
				op := header.OpWord(atomic.LoadUint64(&header.RecordAt(f.hot, s, rec).Op))
				if !op.InFlight() || slots&(1<<op.Filter()) == 0 {
					continue
				}
				if s == f.slot || f.slotLive(s) {
					busy = true
				} else {
					dead |= 1 << op.Filter()
				}
			}
		}
		if !busy {
			return dead, nil
		}
		if time.Now().After(deadline) {
			return dead, fmt.Errorf("%w: operations on retired filters are still in flight", ErrLockTimeout)
		}
		time.Sleep(delay)
		delay = min(2*delay, time.Millisecond)
	}
}

// lockGrowth takes the file's growth lock (held by whoever changes the
// directory or a filter's allocation) and the handle's mutex, and returns
// the function that releases both.
//
// The lock belongs to the handle's descriptor, so growMu serialises this
// handle's holders; both are taken before mu (I17).
//
// A whole-file rewrite holds the growth lock from Freeze to Done or Abort
// (replace.go). So lockGrowth waits in steps, and returns errRetry (having
// waited for the rewrite as waitReplace does) rather than the lock if the
// file has been, or is being, replaced.
func (f *Filter) lockGrowth() (unlock func(), err error) { return f.w.lockGrowth(f) }

func (sharedWriter) lockGrowth(f *Filter) (unlock func(), err error) {
	if f.file == nil {
		f.mu.Lock()
		return f.mu.Unlock, nil
	}
	unlock = func() {
		f.mu.Unlock()
		f.file.Unlock(header.GrowthLockOffset)
		f.growMu.Unlock()
	}
	deadline := time.Now().Add(f.timeout)
	for {
		f.growMu.Lock()
		err := f.file.Lock(header.GrowthLockOffset, true, min(max(time.Until(deadline), 0), growthLockStep))
		if err == nil {
			f.mu.Lock()
			// Holding the lock, a ReplaceFreezing was left by a rewrite
			// that died (thaw).
			f.thaw()
			if atomic.LoadUint64(f.replaced) == header.ReplaceNone {
				return unlock, nil
			}
			unlock()
			return nil, f.move()
		}
		f.growMu.Unlock()
		switch {
		case !errors.Is(err, ErrLockTimeout):
			return nil, fmt.Errorf("growth lock: %w", err)
		case atomic.LoadUint64(f.replaced) != header.ReplaceNone:
			return nil, f.waitReplace()
		case !time.Now().Before(deadline):
			return nil, fmt.Errorf("growth lock held elsewhere for over %v (the last wait: %w)", f.timeout, err)
		}
	}
}

// growthLockStep is how long lockGrowth waits for the lock before it looks
// at the replaced word again.
const growthLockStep = 50 * time.Millisecond
