//go:build amd64 && !race && !purego

package counting4

// casWords makes casBlock's swaps from the i-th word of st.order on
// (blockcas_amd64.s), stopping at the first that fails.
//
//go:noescape
func casWords(b *uint64, st *blockWords, i, n int, rec *Record, first1, changed uint64) (next int, changedOut uint64)
