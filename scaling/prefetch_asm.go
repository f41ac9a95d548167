// Floor 0 (words) of package scaling: the counter prefetch in assembly.

//go:build (amd64 || arm64) && !purego

package scaling

// prefetchKeys prefetches the first byte of each of the n keys at keys (the
// line a short key lies in), so that a batch lookup need not wait for the
// bytes of keys scattered in memory when it hashes them. It never faults.
//
//go:noescape
func prefetchKeys(keys *[]byte, n int)
