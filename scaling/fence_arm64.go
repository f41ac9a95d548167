// Floor 0 (words) of package scaling: the store fence on arm64.

//go:build !purego

package scaling

// loadFence orders the loads before it before the loads after it: arm64
// may serve a later load (the atomic load of mapKeep.detached is a
// load-acquire, which orders only what follows it) before an earlier one,
// so it is a DMB ISHLD (fence_arm64.s).
//
//go:noescape
func loadFence()
