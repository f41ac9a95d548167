// Floor 0 (words) of package scaling: the counter prefetch elsewhere (none).

//go:build !(amd64 || arm64) || purego

package scaling

// prefetchKeys does nothing without a prefetch instruction: a load would
// hold up the work after it until the key arrives, as hashing the key does.
func prefetchKeys(keys *[]byte, n int) {}

// prefetchKey does nothing without a prefetch instruction.
func prefetchKey(p *byte) {}
