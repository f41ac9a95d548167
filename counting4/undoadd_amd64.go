//go:build !race && !purego

package counting4

// undoAddAsm: an Add to a Blocked1024 block with an undo block is one
// call of assembly, undoAdd1024.
const undoAddAsm = true

// undoAdd1024 saves the Blocked1024 block at blk in saved, arms block
// with armed, adds one to each unsaturated counter of the k positions of
// state s in place, stores the mask of the positions changed in changed
// and disarms block (undo_amd64.s); it returns the mask.
//
//go:noescape
func undoAdd1024(saved *[16]uint64, block *uint64, armed uint64, blk *uint64, s uint64, k int, changed *uint64) (mask uint64)
