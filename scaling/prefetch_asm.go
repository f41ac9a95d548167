// Floor 0 (words) of package scaling: the counter prefetch in assembly.

//go:build (amd64 || arm64) && !purego

package scaling

// prefetchKeys prefetches the first byte of each of the n keys at keys (the
// line a short key lies in), so that a batch lookup need not wait for the
// bytes of keys scattered in memory when it hashes them. It never faults.
//
//go:noescape
func prefetchKeys(keys *[]byte, n int)

// prefetchKey prefetches the line at p, the first byte of a single
// operation's key, so that the key's miss (a key read from anywhere in a
// large buffer) runs under the operation's first steps rather than
// before its hash. It never faults.
//
//go:noescape
func prefetchKey(p *byte)
