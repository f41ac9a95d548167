//go:build !amd64 || race || purego

package counting4

// undo1024Asm: updateUndo's steps in Go (undo.go) here, for an Add and a
// Remove.
const undo1024Asm = false

// undoAdd1024 is not called here (undo1024Asm is false).
func undoAdd1024(saved *[16]uint64, block *uint64, armed uint64, blk *uint64, s uint64, k int, changed *uint64) (mask uint64) {
	panic("counting4: undoAdd1024 without assembly")
}

// undoRemove1024 is not called here (undo1024Asm is false).
func undoRemove1024(saved *[16]uint64, block *uint64, armed uint64, blk *uint64, s uint64, k int, changed *uint64) (mask uint64, ok bool) {
	panic("counting4: undoRemove1024 without assembly")
}
