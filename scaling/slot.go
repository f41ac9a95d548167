// Floor 2 (a filter's parts) of package scaling: the writer slot a handle
// claims, and its records.

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
		if f.slotInFlight(s) > 0 {
			if f.file != nil {
				f.file.Unlock(header.SlotOffset(s))
			}
			continue
		}
		sl := header.SlotAt(f.hot, s)
		var tok [8]byte
		rand.Read(tok[:])
		atomic.StoreUint64(&sl.Owner, binary.LittleEndian.Uint64(tok[:])|1)
		atomic.StoreUint64(&sl.PID, uint64(os.Getpid()))
		atomic.StoreUint64(&sl.Opened, uint64(time.Now().UnixNano()))
		f.slot = s
		if c := f.chain.Load(); c != nil {
			// The chain was loaded before the slot was claimed.
			for _, m := range c.f {
				if m.counts != nil {
					m.own, m.ownSlot = &m.counts[s*countStride], s
				}
			}
		}
		for r := range f.rec {
			rc := &f.rec[r]
			rc.rec = &sl.Records[r]
			cw, own := header.CountWord(r)
			rc.cw, rc.cwOwn = uint8(cw), own
			// Every record is idle here, but a writer killed inside finish
			// (after the op word went idle) may have left its masks and
			// evidence set.
			atomic.StoreUint64(&rc.rec.Changed, 0)
			atomic.StoreUint64(&rc.rec.Doubt, 0)
			atomic.StoreUint64(&rc.rec.Word, 0)
			atomic.StoreUint64(&rc.rec.New, 0)
			atomic.StoreUint64(&rc.rec.IndexSlot, 0)
			atomic.StoreUint64(&rc.rec.IndexFP, 0)
			atomic.StoreUint64(&rc.busy, 0)
		}
		return nil
	}
	return ErrNoSlot
}

// slotInFlight counts the records of slot s that hold an operation in flight.
func (f *Filter) slotInFlight(s int) int {
	n := 0
	for r := 0; r < header.RecordsPerSlot; r++ {
		if header.OpWord(atomic.LoadUint64(&header.RecordAt(f.hot, s, r).Op)).InFlight() {
			n++
		}
	}
	return n
}

func (f *Filter) releaseSlot() {
	if f.slot < 0 {
		return
	}
	atomic.StoreUint64(&header.SlotAt(f.hot, f.slot).Owner, 0)
	if f.file != nil {
		f.file.Unlock(header.SlotOffset(f.slot))
	}
	f.slot = -1
}

// claimRecord takes an idle record of this handle's slot for one operation,
// starting at a position chosen by the key hash so goroutines rarely collide.
func (sharedWriter) claimRecord(f *Filter, h uint64, op uint64, m *member) *record {
	n := uint64(len(f.rec))
	for i := h % n; ; i = (i + 1) % n {
		r := &f.rec[i]
		if r.claim() {
			r.begin(h, op, m)
			return r
		}
		if i == (h%n+n-1)%n {
			time.Sleep(time.Microsecond) // every record busy: more goroutines than records
		}
	}
}

// claim takes r for one operation of a goroutine of a shared handle, in
// process memory: the mapped words of the record are this goroutine's alone
// until free, which lets finish make the op word idle before it clears the
// masks. A claimed record also keeps the mapping (shutdown waits for it, as
// for a guard). A compare-and-swap: sequentially consistent, so a claim and
// shutdown's store of closed are seen in one order (I2's shape: a
// claimer that then reads closed false is waited for).
func (r *record) claim() bool { return atomic.CompareAndSwapUint64(&r.busy, 0, 1) }

// fence orders the goroutine's stores before it before its loads after
// it (a store-load barrier), for a goroutine that holds r: a locked add of
// nothing to r's busy word, a line of process memory no other goroutine
// touches while r is claimed (on amd64 a LOCK XADD: a full barrier; the
// count's plain store needs it before the page mark, sharedWriter.count).
func (r *record) fence() { atomic.AddUint64(&r.busy, 0) }

// free gives r back: a release store (StoreOrdered), which every store of
// the operation precedes, for the next claimer (whose swap reads it) and
// for shutdown. Nothing needs it ordered before a later load: a locked
// store here cost the shared writer a locked instruction per operation.
func (r *record) free() { counting4.StoreOrdered(&r.busy, 0) }

// begin names the operation in a claimed record: the hash first, then the
// op word. Record first, then the state word (I2, docs/PROTOCOLS.md): the
// op word's store is sequentially consistent, or x86 may let the caller's
// load of the state word pass it.
func (r *record) begin(h, op uint64, m *member) {
	counting4.StoreOrdered(&r.rec.Hash, h)
	old := atomic.LoadUint64(&r.rec.Op)
	atomic.StoreUint64(&r.rec.Op, uint64(header.OpWord(old).Begin(op, m.idx)))
}

// finish completes the operation (end) and frees the record for the
// handle's other goroutines.
func (sharedWriter) finish(r *record, completed bool) {
	r.end(completed)
	r.free()
}

// end completes the operation: the record goes idle (completed count + 1)
// in one atomic store, and only then are the masks and the evidence
// cleared (I6). (A death in between leaves an idle record with stray masks
// or evidence, which mean nothing and which claimSlot clears.)
func (r *record) end(completed bool) {
	rec := r.rec
	fin := uint64(header.OpWord(atomic.LoadUint64(&rec.Op)).Finish(completed))
	// Only the owner writes the record: words already zero need no
	// store. (An exclusive writer's block changes leave the doubt mask
	// and the evidence zero, and most operations the index words.) The
	// masks and the evidence are cleared in the op word's call.
	if atomic.LoadUint64(&rec.Changed)|atomic.LoadUint64(&rec.Doubt)|atomic.LoadUint64(&rec.Word)|atomic.LoadUint64(&rec.New) != 0 {
		counting4.StoreOrderedZero4(&rec.Op, fin, rec.Masks())
	} else {
		counting4.StoreOrdered(&rec.Op, fin)
	}
	if atomic.LoadUint64(&rec.IndexSlot)|atomic.LoadUint64(&rec.IndexFP) != 0 {
		counting4.StoreOrdered(&rec.IndexSlot, 0)
		counting4.StoreOrdered(&rec.IndexFP, 0)
	}
}

// endExcl is end for exclFast's operations, which store no record word
// but the hash, the op word and the changed mask (an exclusive writer's
// block change with an undo block leaves the doubt mask and the evidence
// alone, and they use no late-add index): the words end would test are as
// the operation found them, zero after the end of the one before it or
// claimSlot's clearing; a word left set by an operation that never ended
// means nothing in an idle record, as end says, and the next end clears it.
func (r *record) endExcl(completed bool) {
	rec := r.rec
	counting4.StoreOrdered2(&rec.Op, uint64(header.OpWord(atomic.LoadUint64(&rec.Op)).Finish(completed)), &rec.Changed, 0)
}

// slotLive reports whether a live handle holds slot s. In memory mode only
// this handle exists.
func (f *Filter) slotLive(s int) bool {
	if f.file == nil {
		return s == f.slot
	}
	held, err := f.file.Held(header.SlotOffset(s))
	return err != nil || held
}
