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

// casAsm1024: casBlock does a Blocked1024 block too here.
const casAsm1024 = false

// casUpdate1024 is not called here (casAsm1024 is false).
func casUpdate1024(blk *uint64, s uint64, k int, add bool, rec *Record, first1 uint64) (r int, changed0, changed uint64) {
	panic("counting4: casUpdate1024 without assembly")
}
