//go:build (!amd64 && !arm64) || race || purego

package counting4

import "sync/atomic"

// storeRelease is StoreOrdered's store: here an atomic store (store.go).
func storeRelease(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
