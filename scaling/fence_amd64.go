// Floor 0 (words) of package scaling: the store fence on amd64.

//go:build !purego

package scaling

// loadFence orders the loads before it before the loads after it. amd64
// never reorders a load with a later load (its memory model is TSO), and the
// compiler does not move loads across the atomic load that follows, so
// there is nothing to do.
func loadFence() {}
