//go:build amd64 && !race && !purego

package counting4

// casWords makes casBlock's swaps from the i-th word of st.order on
// (blockcas_amd64.s), stopping at the first that fails.
//
//go:noescape
func casWords(b *uint64, st *blockWords, i, n int, rec *Record, first1, changed uint64) (next int, changedOut uint64)

// asmWalk: casBlock walks a Blocked1024 block's positions in assembly
// (casWalk1024).
const asmWalk = true

// casWalk1024 is casBlock's walk of the k positions of state s in the
// Blocked1024 block at blk (blockcas_amd64.s): the words touched read
// once into st.old and st.nv, their order in st.order, the counters
// changed in st.nv and st.chg; n the words in st.order, or -1 for a
// Remove that meets a zero counter.
//
//go:noescape
func casWalk1024(blk *uint64, st *blockWords, s uint64, k int, add bool) (n int)
