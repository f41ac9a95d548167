//go:build !race && !purego

package counting4

// undo1024Asm: an Add to a Blocked1024 block with an undo block is one
// call of assembly, undoAdd1024, and a Remove one of undoRemove1024.
const undo1024Asm = true

// undoAdd1024 saves the Blocked1024 block at blk in saved, arms block
// with armed, adds one to each unsaturated counter of the k positions of
// state s in place, stores the mask of the positions changed in changed
// and disarms block (undo_amd64.s); it returns the mask.
//
//go:noescape
func undoAdd1024(saved *[16]uint64, block *uint64, armed uint64, blk *uint64, s uint64, k int, changed *uint64) (mask uint64)

// undoRemove1024 is updateUndo's Remove from the Blocked1024 block at blk
// in one call (undo_amd64.s): the counters one down in a copy, nothing
// stored and ok false if one is zero, else, if mask is not 0, the block
// saved, armed, the copy stored, mask stored in changed, disarmed.
//
//go:noescape
func undoRemove1024(saved *[16]uint64, block *uint64, armed uint64, blk *uint64, s uint64, k int, changed *uint64) (mask uint64, ok bool)

// nibbleOneByte[b] is nibbleOne[b&15]: the assembly walks of a
// Blocked1024 block (slot1024_amd64.h) index it with a position's whole
// byte, two instructions a position fewer than masking its nibble first
// (about 16 an operation at k = 8), for 2 KiB of table in place of 128
// bytes.
var nibbleOneByte = func() (t [256]uint64) {
	for b := range t {
		t[b] = nibbleOne[b&15]
	}
	return t
}()
