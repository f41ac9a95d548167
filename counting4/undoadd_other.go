//go:build !amd64 || race || purego

package counting4

// undoAddAsm: updateUndo's steps in Go (undo.go) here.
const undoAddAsm = false

// undoAdd1024 is not called here (undoAddAsm is false).
func undoAdd1024(saved *[16]uint64, block *uint64, armed uint64, blk *uint64, s uint64, k int, changed *uint64) (mask uint64) {
	panic("counting4: undoAdd1024 without assembly")
}
