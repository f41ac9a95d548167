// Floor 0 (words) of package scaling: the store fence elsewhere.

//go:build !(amd64 || arm64) || purego

package scaling

import "sync/atomic"

var fenceWord atomic.Uint32

// loadFence orders the loads before it before the loads after it. Without
// an instruction for it at hand, an atomic read-modify-write (a full
// barrier on every architecture Go supports) does it; it runs only after a
// lookup found a key absent.
func loadFence() { fenceWord.Add(1) }
