package scaling

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/mmapfile"
)

// Stopping writers: the ways, one name each.
//
// Every one rests on the record handshake: a writer publishes its record
// (claimRecord) before it reads the word that would stop it, and whoever
// stops writers stores that word before it reads the records; so either
// the writer sees the word, or the stopper sees the record in flight.
// On the writer's side each is one check, at the gate step of an Add or a
// Remove (ops.go).
//
//   - Flush phase (flush.go; seqnum calls it freezing writers): under the
//     flush lock, Flush moves the state word to Flushing, and claims the
//     file clean only if no record was in flight (recordTotals). A writer
//     that reads Flushing after its record is published goes back to
//     Marking (ensureDirty), which makes the flush fail to claim clean:
//     it stops writers only while it marks the file dirty.
//   - Retirement (retire.go): the hot retired word, then waitRecords for
//     the retired filters' entries. It stops only the writers on those
//     filters: their member is gone, and they start over on the new chain
//     (retryGone).
//   - Freeze (freeze, below): under the growth and flush locks, the hot
//     replaced word at ReplaceFreezing, then waitRecords for every entry.
//     It stops every writer of the file, in every process: their members
//     are gone, and they wait (waitReplace) until the word changes. Two
//     holders use it, with the same locks and the same word: a whole-file
//     rewrite (Freeze, until Done or Abort; replace.go) and the exclusive
//     writer (takeExclusive, until Close; exclusive.go), which alone reads
//     its own replaced word (noReplace) and so is not stopped. A holder
//     that dies leaves the word for the next holder of the growth lock to
//     thaw (thaw).
//   - Hold (writer.holdOps): the exclusive writer's mutex wmu, which stops
//     the handle's own goroutines while its Flush, RetireBefore or Close
//     runs: their records are not published in order (exclWriter).
//   - Closed-file rewrite: a file before version 1.3 has no replaced word
//     its handles read (Freeze returns ErrNotLive), so a rewrite waits
//     until no handle has it open (the open lock, header.OpenLockOffset,
//     taken by the rewrite in recover).
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

// freeze stops every writer of the file (see above), f holding the locks
// of lockFreeze: it stores ReplaceFreezing and waits until no live writer
// has an operation in flight (a dead writer's records stay, for Repair).
// If they do not finish within the lock timeout it stores ReplaceNone
// again and returns ErrLockTimeout.
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
