//go:build (!amd64 && !arm64) || race || purego

package counting4

import (
	"sync/atomic"
	"unsafe"
)

// applyUndo is steps 2 to 4 of a block's change with an undo block
// (undo.go), in atomic loads and stores.
func applyUndo(saved *[16]uint64, block *uint64, armed uint64, blk, nv *uint64, n int, changed *uint64, mask uint64) {
	b, v := unsafe.Slice(blk, n), unsafe.Slice(nv, n)
	for i := range b {
		atomic.StoreUint64(&saved[i], atomic.LoadUint64(&b[i]))
	}
	atomic.StoreUint64(block, armed)
	for i := range b {
		atomic.StoreUint64(&b[i], v[i])
	}
	atomic.StoreUint64(changed, mask)
	atomic.StoreUint64(block, 0)
}
