package counting4

import (
	"unsafe"

	"github.com/dablooms/dablooms/header"
)

// An exclusive writer with an undo block (SetUndo; docs/FORMAT.md, "Undo
// block") changes a blocked filter a whole block at a time, as one step of
// the record protocol in place of one per position:
//
//  1. compute the block's new words from its words as they are (nobody
//     else writes them) and decide: a Remove whose key the counters do not
//     hold changes nothing;
//  2. save the block's words in the undo block, then arm it (its block
//     word names the block): the saved words are complete before it is
//     armed;
//  3. store the new words;
//  4. set the record's changed mask (the positions changed, as the
//     per-position protocol leaves it), then disarm the undo block.
//
// A writer killed in 2, 3 or 4 before the disarm leaves the undo block
// armed, and whoever comes next stores the saved words back and clears the
// record's changed mask (set in 4 just before the disarm): the block is
// then as before the operation, whose record says nothing changed. Killed
// after the disarm, the operation changed its positions, as the record
// says. So the record is exact at every instruction, as the per-position
// steps make it, with one ordered step where they made four per position.
//
// An Add to a Blocked1024 block on amd64 (AddExcl) is all four steps in
// one function of assembly, undoAdd1024: it has nothing to decide, so
// it saves and arms first and adds one to each counter in place, with no
// copy of the block to change and store back (a word two positions share
// is stored twice, each time one up; an Add that changes nothing still
// saves, arms and disarms). A Remove from one is undoRemove1024: the
// steps of updateUndo in one call, the copy in its frame.
//
// Step 2 to 4 are applyUndo: on amd64 and arm64 one function of assembly
// (undo_*.s) of plain loads and stores, the two stores that arm and
// disarm ordered after the ones before them (amd64 keeps stores in
// program order; STLR on arm64), which the compiler can neither reorder
// nor drop; elsewhere, and under the race detector, atomic stores. Other
// processes' lookups see each counter word whole, old or new (or between,
// in undoAdd1024), and every word holds at least the counts of the keys
// other than this one.

// Undo is an exclusive writer's undo block: its block word
// (header.UndoBlockOffset) and saved words (header.UndoSavedOffset).
type Undo struct {
	Block *uint64
	Saved *[header.UndoSavedWords]uint64
}

// SetUndo gives the filter an exclusive writer's undo block (nil: none),
// and the filter's directory entry, which the armed block word names
// (header.UndoBlockOffset). With AddExcl and RemoveExcl, a blocked filter then
// changes a key's block in one step (see above); other layouts keep the
// per-position steps. Set it while no update is in flight.
func (f *Filter) SetUndo(u *Undo, entry int) {
	f.ub, f.ubEntry = u, uint64(entry)<<header.UndoEntryShift
}

// changedWord is the record's changed mask, or, for a nil record, a word
// nobody reads (not allocated per call: an Add stays allocation-free).
func (r *Record) changedWord() *uint64 {
	if r == nil || r.Changed == nil {
		return &unrecorded
	}
	return r.Changed
}

// unrecorded takes the changed masks of changes made without a record.
var unrecorded uint64

// updateUndo is AddProbe (add) or RemoveProbe for a filter with an undo
// block, for the block blk, word first of the filter, of probe state s. It
// reports false for a Remove whose key the counters do not hold, having
// stored nothing. changed is the record's changed mask.
func updateUndo[B [BlockCounters512 / 16]uint64 | [BlockCounters1024 / 16]uint64](f *Filter, blk *B, first, s uint64, add bool, changed *uint64) (ok bool) {
	k := f.k
	nv := *blk // the words as they are: nobody else writes them
	var mask uint64
	if add {
		mask = addNibbles(&nv, s, k)
	} else if mask, ok = removeNibbles(&nv, s, k); !ok {
		return false
	}
	if mask != 0 {
		applyUndo(f.ub.Saved, f.ub.Block, f.ubEntry|(first+1), &(*blk)[0], &nv[0], len(nv), changed, mask)
		f.touch(first) // (a block lies in one page)
	}
	return true
}

// addNibbles adds one to each of the k counters of position state s in
// the block's words nv that is not saturated, and returns the mask of the
// positions it changed. An add and a remove each have a loop of their
// own, apart from updateUndo's other live values (with them the loop
// spilled and reloaded three words a position), with the position's bit
// shifted along rather than made from j.
func addNibbles[B [BlockCounters512 / 16]uint64 | [BlockCounters1024 / 16]uint64](nv *B, s uint64, k int) (mask uint64) {
	w, per, nw := uint(8), 8, int(unsafe.Sizeof(*nv)/8) // (see containsBlock)
	if nw == BlockCounters512/16 {
		w, per = 7, 9
	}
	// b: nv indexed without a dictionary (wi < nw); the table's
	// address and the nil check once, not per position.
	ones, b := &nibbleOne, unsafe.Slice((*uint64)(unsafe.Pointer(nv)), nw)
	bit := uint64(1)
	for left := k; ; s = header.Fmix64(s ^ golden) {
		x, n := s, min(left, per)
		left -= n
		for ; n > 0; n-- {
			c := x & (1<<w - 1)
			x >>= w
			wi, one := c>>4&uint64(nw-1), ones[c&15] // (the masks: no bounds checks)
			// A saturated counter (15) would carry out of its nibble and
			// leave it 0: it stays.
			if n := b[wi] + one; n&(15*one) != 0 {
				b[wi] = n
				mask |= bit
			}
			bit <<= 1
		}
		if left == 0 {
			return mask
		}
	}
}

// removeNibbles takes one from each of the k counters of position state
// s in nv that is not saturated, and returns the mask of the positions it
// changed; or ok false if one is zero: every counter not saturated must
// hold one count per position of the key on it (see RemoveExcl).
func removeNibbles[B [BlockCounters512 / 16]uint64 | [BlockCounters1024 / 16]uint64](nv *B, s uint64, k int) (mask uint64, ok bool) {
	w, per, nw := uint(8), 8, int(unsafe.Sizeof(*nv)/8) // (see containsBlock)
	if nw == BlockCounters512/16 {
		w, per = 7, 9
	}
	ones, b := &nibbleOne, unsafe.Slice((*uint64)(unsafe.Pointer(nv)), nw)
	bit := uint64(1)
	for left := k; ; s = header.Fmix64(s ^ golden) {
		x, n := s, min(left, per)
		left -= n
		for ; n > 0; n-- {
			c := x & (1<<w - 1)
			x >>= w
			wi, one := c>>4&uint64(nw-1), ones[c&15]
			switch o := b[wi]; o & (15 * one) {
			case 15 * one: // saturated: stays
			case 0:
				return 0, false
			default:
				b[wi] = o - one
				mask |= bit
			}
			bit <<= 1
		}
		if left == 0 {
			return mask, true
		}
	}
}

// nibbleOne[i] is one in counter i of a word: a load in place of a shift
// by a variable count, which on amd64 ties up CX and makes the loops of
// updateUndo spill.
var nibbleOne = [16]uint64{1, 1 << 4, 1 << 8, 1 << 12, 1 << 16, 1 << 20, 1 << 24, 1 << 28,
	1 << 32, 1 << 36, 1 << 40, 1 << 44, 1 << 48, 1 << 52, 1 << 56, 1 << 60}
