//go:build (!amd64 && !arm64) || race || purego

package counting4

import "sync/atomic"

// storeRelease is StoreOrdered's store: here an atomic store (store.go).
func storeRelease(p *uint64, v uint64) { atomic.StoreUint64(p, v) }

// storeRelease2 is two of StoreOrdered's stores, in order.
func storeRelease2(a *uint64, av uint64, b *uint64, bv uint64) {
	atomic.StoreUint64(a, av)
	atomic.StoreUint64(b, bv)
}

// storeReleaseZero4 is StoreOrdered's store of av at a, then of 0 at each
// word of z, in order.
func storeReleaseZero4(a *uint64, av uint64, z *[4]uint64) {
	atomic.StoreUint64(a, av)
	for i := range z {
		atomic.StoreUint64(&z[i], 0)
	}
}

// storeRelease3 is three of StoreOrdered's stores, in order.
func storeRelease3(a *uint64, av uint64, b *uint64, bv uint64, c *uint64, cv uint64) {
	atomic.StoreUint64(a, av)
	atomic.StoreUint64(b, bv)
	atomic.StoreUint64(c, cv)
}

// storeRelease4 is four of StoreOrdered's stores, in order.
func storeRelease4(a *uint64, av uint64, b *uint64, bv uint64, c *uint64, cv uint64, d *uint64, dv uint64) {
	atomic.StoreUint64(a, av)
	atomic.StoreUint64(b, bv)
	atomic.StoreUint64(c, cv)
	atomic.StoreUint64(d, dv)
}
