//go:build amd64 && !race && !purego

package counting4

// casWords makes casBlock's swaps from the i-th word of st.order on
// (blockcas_amd64.s), stopping at the first that fails.
//
//go:noescape
func casWords(b *uint64, st *blockWords, i, n int, rec *Record, first1, changed uint64) (next int, changedOut uint64)

// casAsm1024: a shared writer's Add or Remove of a Blocked1024 block
// with a full record is one call of assembly, casUpdate1024
// (casBlock1024).
const casAsm1024 = true

// casUpdate1024 is casBlock's walk, swaps and retries for the Blocked1024
// block at blk and the k positions of state s, in one call
// (blockcas_amd64.s): casDone with the record's changed mask stored;
// casAbsent for a Remove that met a counter at 0, nothing stored; or
// casRaced for a Remove whose retry met one, with changed0 the changed
// mask before and changed the swaps made (to restore).
//
//go:noescape
func casUpdate1024(blk *uint64, s uint64, k int, add bool, rec *Record, first1 uint64) (r int, changed0, changed uint64)
