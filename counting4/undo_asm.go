//go:build (amd64 || arm64) && !race && !purego

package counting4

// applyUndo is steps 2 to 4 of a block's change with an undo block
// (undo.go): save the n words at blk in saved, store armed in block, store
// the n words at nv over blk, store mask in changed, store 0 in block.
//
//go:noescape
func applyUndo(saved *[16]uint64, block *uint64, armed uint64, blk, nv *uint64, n int, changed *uint64, mask uint64)
