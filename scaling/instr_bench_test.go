package scaling

import "testing"

// instrAdd and instrRemove are the calls whose inclusive instruction
// counts bench/instructions.sh reads from callgrind: kept out of line so
// that each has a symbol of its own, whatever the compiler inlines below
// them.
//
//go:noinline
func instrAdd(f *Filter, key []byte, id uint64) error { return f.Add(key, id) }

//go:noinline
func instrRemove(f *Filter, key []byte, id uint64) error { return f.Remove(key, id) }

// BenchmarkInstr is BenchmarkCachedAddRemove's loop (an Add and a Remove
// of one key on a cached filter holding 10,000 keys, the common case of a
// single write: the id in the newest filter's range, no growth, no late
// add) through instrAdd and instrRemove, for bench/instructions.sh, which
// runs it under callgrind at two lengths and divides the difference of
// each function's inclusive count by the difference of the lengths.
func BenchmarkInstr(b *testing.B) {
	requireFiles(b)
	const n = 10_000
	keys := getKeys(n)
	for _, mode := range []struct {
		name      string
		exclusive bool
	}{{"shared", false}, {"excl", true}} {
		b.Run(mode.name, func(b *testing.B) {
			f := cachedFilter(b, keys, n, mode.exclusive)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := keys.key(i % n)
				if err := instrAdd(f, k, uint64(n+i)); err != nil {
					b.Fatal(err)
				}
				if err := instrRemove(f, k, uint64(n+i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
