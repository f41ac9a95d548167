//go:build !amd64 || race || purego

package counting4

import (
	"sync/atomic"
	"unsafe"
)

// casWords makes casBlock's swaps from the i-th word of st.order on
// (see blockcas_amd64.s), stopping at the first that fails.
func casWords(b *uint64, st *blockWords, i, n int, rec *Record, first1, changed uint64) (next int, changedOut uint64) {
	for ; i < n; i++ {
		wi := uint64(st.order[i])
		m := st.chg[wi]
		if m == 0 {
			continue
		}
		storeRelease4(rec.Changed, changed, rec.Word, first1+wi, rec.New, st.nv[wi], rec.Doubt, m)
		if !atomic.CompareAndSwapUint64((*uint64)(unsafe.Add(unsafe.Pointer(b), wi*8)), st.old[wi], st.nv[wi]) {
			return i, changed
		}
		changed |= m
	}
	return n, changed
}

// asmWalk: casBlock's walk is its own Go loop here.
const asmWalk = false

// casWalk1024 is not called here (asmWalk is false).
func casWalk1024(blk *uint64, st *blockWords, s uint64, k int, add bool) (n int) {
	panic("counting4: casWalk1024 without assembly")
}
