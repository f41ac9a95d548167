package scaling

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"os"
	"sync/atomic"
	"time"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
)

// claimSlot takes a free writer slot for this handle's lifetime. A slot is
// free when no open file description holds its lock byte and it holds no
// interrupted operation (those wait for recovery). In memory mode slot 0 is
// taken without locks.
func (f *Filter) claimSlot() error {
	for s := 0; s < header.NumSlots; s++ {
		if f.file != nil {
			if err := f.file.Lock(header.SlotOffset(s), true, 0); err != nil {
				if errors.Is(err, ErrLockTimeout) {
					continue // a live handle owns it
				}
				return err
			}
		}
		w, err := f.r.Words(header.SlotOffset(s), header.SlotSize/8)
		if err != nil {
			return err
		}
		if f.slotInFlight(s) > 0 {
			if f.file != nil {
				f.file.Unlock(header.SlotOffset(s))
			}
			continue
		}
		var tok [8]byte
		rand.Read(tok[:])
		atomic.StoreUint64(&w[header.SlotOwnerOffset/8], binary.LittleEndian.Uint64(tok[:])|1)
		atomic.StoreUint64(&w[header.SlotPIDOffset/8], uint64(os.Getpid()))
		atomic.StoreUint64(&w[header.SlotOpenedOffset/8], uint64(time.Now().UnixNano()))
		f.slot, f.slotWord = s, w
		if c := f.chain.Load(); c != nil {
			// The chain was loaded before the slot was claimed.
			for _, m := range c.f {
				if m.counts != nil {
					m.own, m.ownSlot = &m.counts[s*countStride], s
				}
			}
		}
		for r := range f.rec {
			base := (r + 1) * header.LineSize / 8
			rc := &f.rec[r]
			rc.op, rc.hash = &w[base+header.RecOpOffset/8], &w[base+header.RecHashOffset/8]
			rc.changed, rc.doubt = &w[base+header.RecChangedOffset/8], &w[base+header.RecDoubtOffset/8]
			rc.word, rc.newVal = &w[base+header.RecWordOffset/8], &w[base+header.RecNewOffset/8]
			rc.ixSlot, rc.ixFP = &w[base+header.RecIndexSlotOffset/8], &w[base+header.RecIndexFPOffset/8]
			// Every record is idle here, but a writer killed inside finish
			// (after the op word went idle) may have left its masks and
			// evidence set.
			atomic.StoreUint64(rc.changed, 0)
			atomic.StoreUint64(rc.doubt, 0)
			atomic.StoreUint64(rc.word, 0)
			atomic.StoreUint64(rc.newVal, 0)
			atomic.StoreUint64(rc.ixSlot, 0)
			atomic.StoreUint64(rc.ixFP, 0)
			rc.busy.Store(false)
		}
		return nil
	}
	return ErrNoSlot
}

// recordOp is the op word of record r of slot s.
func (f *Filter) recordOp(s, r int) *uint64 {
	return f.hotWord(header.RecordOffset(s, r) + header.RecOpOffset)
}

// slotInFlight counts the records of slot s that hold an operation in flight.
func (f *Filter) slotInFlight(s int) int {
	n := 0
	for r := 0; r < header.RecordsPerSlot; r++ {
		if header.OpWord(atomic.LoadUint64(f.recordOp(s, r))).InFlight() {
			n++
		}
	}
	return n
}

func (f *Filter) releaseSlot() {
	if f.slot < 0 {
		return
	}
	atomic.StoreUint64(&f.slotWord[header.SlotOwnerOffset/8], 0)
	if f.file != nil {
		f.file.Unlock(header.SlotOffset(f.slot))
	}
	f.slot = -1
}

// claimRecord takes an idle record of this handle's slot for one operation,
// starting at a position chosen by the key hash so goroutines rarely collide.
func (sharedWriter) claimRecord(f *Filter, h uint64, op uint64, filter int) *record {
	n := uint64(len(f.rec))
	for i := h % n; ; i = (i + 1) % n {
		r := &f.rec[i]
		// The claim is made in process memory: the mapped words of the
		// record are this goroutine's alone until finish releases it, which
		// lets finish make the op word idle before it clears the masks. The
		// hash is stored before the op word names the operation.
		if r.busy.CompareAndSwap(false, true) {
			counting4.StoreOrdered(r.hash, h)
			old := atomic.LoadUint64(r.op)
			// A sequentially consistent store: the caller reads the state
			// word next, and a flush must not miss this record (x86 may
			// otherwise let that load pass this store).
			atomic.StoreUint64(r.op, uint64(header.OpWord(old).Begin(op, filter)))
			return r
		}
		if i == (h%n+n-1)%n {
			time.Sleep(time.Microsecond) // every record busy: more goroutines than records
		}
	}
}

// finish completes the operation (end) and frees the record for the
// handle's other goroutines.
func (sharedWriter) finish(r *record, completed bool) {
	r.end(completed)
	r.busy.Store(false)
}

// end completes the operation: the record is idle again and its count of
// completed operations is one higher, in one atomic store. Only then are the
// masks and the evidence cleared: while the op word names the operation,
// Changed must name every counter it changed. (A death in between leaves an
// idle record with stray masks or evidence, which mean nothing and which
// claimSlot clears.)
func (r *record) end(completed bool) {
	counting4.StoreOrdered(r.op, uint64(header.OpWord(atomic.LoadUint64(r.op)).Finish(completed)))
	counting4.StoreOrdered(r.changed, 0)
	counting4.StoreOrdered(r.doubt, 0)
	counting4.StoreOrdered(r.word, 0)
	counting4.StoreOrdered(r.newVal, 0)
	if atomic.LoadUint64(r.ixSlot) != 0 || atomic.LoadUint64(r.ixFP) != 0 {
		counting4.StoreOrdered(r.ixSlot, 0)
		counting4.StoreOrdered(r.ixFP, 0)
	}
}
