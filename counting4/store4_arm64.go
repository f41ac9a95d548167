//go:build !race && !purego

package counting4

// storeRelease4 is four of StoreOrdered's stores in one call, in order:
// casBlock's record steps of a word on arm64 (blockcas_other.go). On
// amd64 casWords makes them in its own loop (blockcas_amd64.s), and
// elsewhere, and under the race detector, store_other.go has them in Go.
//
//go:noescape
func storeRelease4(a *uint64, av uint64, b *uint64, bv uint64, c *uint64, cv uint64, d *uint64, dv uint64)
