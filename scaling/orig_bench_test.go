package scaling

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/dablooms/dablooms/counting4"
)

// BenchmarkOrigConfig times single Adds and Removes in the C original's
// configuration (Capacity 1M, ErrorRate 0.01, GrowthFactor 1,
// TighteningRatio 0.5), as the bench tool's ours-original row does: keys
// `key-%012d` added in index order with id = index into a fresh file, and
// removed in the same order with the same ids. Use -benchtime Nx with N up
// to 1M (the keys of one pass):
//
//	go test ./scaling -run '^$' -bench OrigConfig -benchtime 1000000x
func BenchmarkOrigConfig(b *testing.B) {
	requireFiles(b)
	const n = 1_000_000
	opts := func() *Options {
		return &Options{Capacity: 1_000_000, ErrorRate: 0.01, GrowthFactor: 1, TighteningRatio: 0.5}
	}
	keys := getKeys(n)
	for _, mode := range []struct {
		name      string
		exclusive bool
	}{{"", false}, {"excl-", true}} {
		// A fresh file, with n keys added first for the remove half.
		open := func(b *testing.B, adds int) *Filter {
			path := filepath.Join(b.TempDir(), "orig.dbl")
			f, err := Create(path, opts())
			if err != nil {
				b.Fatal(err)
			}
			if mode.exclusive {
				f.Close()
				if f, err = Open(path, &OpenOptions{Exclusive: true}); err != nil {
					b.Fatal(err)
				}
			}
			for i := range adds {
				if err := f.Add(keys.key(i), uint64(i)); err != nil {
					b.Fatal(err)
				}
			}
			return f
		}
		for _, op := range []struct {
			name string
			do   func(f *Filter, key []byte, id uint64) error
		}{{"add", (*Filter).Add}, {"remove", (*Filter).Remove}} {
			b.Run(mode.name+op.name, func(b *testing.B) {
				if b.N > n {
					b.Skip("at most 1M operations (one pass)")
				}
				adds := 0
				if op.name == "remove" {
					adds = b.N
				}
				f := open(b, adds)
				defer f.Close()
				var ct cpuTimer
				b.ReportAllocs()
				b.ResetTimer()
				ct.start()
				for i := 0; i < b.N; i++ {
					if err := op.do(f, keys.key(i), uint64(i)); err != nil {
						b.Fatal(err)
					}
				}
				ct.stop(b)
			})
		}
	}
}

// BenchmarkOrigFloor is the floor of BenchmarkOrigConfig: the same keys
// and filter, but only what the counters need, none of the bookkeeping
// that makes an operation recoverable, exact and safe beside other
// writers (records, dirty mark, admission, id range, item count):
//   - cas-add, cas-remove: hash, prepare, and the counter update with a
//     compare-and-swap per word (AddProbe, RemoveProbe after the presence
//     test a Remove makes), without a record;
//   - plain-add, plain-remove: hash, positions, and a plain
//     read-modify-write per counter, as the C original changes its
//     counters (no other writer could share the file).
//
// Each sub-benchmark adds (or removes) b.N keys: -benchtime 1000000x.
func BenchmarkOrigFloor(b *testing.B) {
	requireFiles(b)
	const n = 1_000_000
	keys := getKeys(n)
	setup := func(b *testing.B, fill bool) (*member, uint64) {
		if b.N > n {
			b.Skip("at most 1M keys (one pass)")
		}
		f, err := Create(filepath.Join(b.TempDir(), "orig.dbl"), &Options{Capacity: 1_000_000, ErrorRate: 0.01, GrowthFactor: 1, TighteningRatio: 0.5})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		m := f.chain.Load().f[0]
		if fill {
			for i := 0; i < b.N; i++ {
				m.cf.AddProbe(m.cf.Prepare(HashKey(f.params.Seed, keys.key(i))+m.salt), nil)
			}
		}
		return m, f.params.Seed
	}
	time := func(b *testing.B, op func(i int)) {
		var ct cpuTimer
		b.ResetTimer()
		ct.start()
		for i := 0; i < b.N; i++ {
			op(i)
		}
		ct.stop(b)
	}
	b.Run("cas-add", func(b *testing.B) {
		m, seed := setup(b, false)
		time(b, func(i int) { m.cf.AddProbe(m.cf.Prepare(HashKey(seed, keys.key(i))+m.salt), nil) })
	})
	b.Run("cas-remove", func(b *testing.B) {
		m, seed := setup(b, true)
		time(b, func(i int) {
			p := m.cf.Prepare(HashKey(seed, keys.key(i)) + m.salt)
			if !m.cf.ContainsProbe(p) || !m.cf.RemoveProbe(p, nil) {
				b.Fatal("not present")
			}
		})
	})
	for _, dir := range []string{"add", "remove"} {
		b.Run("plain-"+dir, func(b *testing.B) {
			m, seed := setup(b, dir == "remove")
			w := m.cf.Words()
			var pos [counting4.MaxK]uint64
			p := pos[:m.desc.K]
			time(b, func(i int) {
				m.cf.Positions(HashKey(seed, keys.key(i))+m.salt, p)
				for _, c := range p {
					if dir == "add" {
						w[c>>4] += 1 << (c & 15 * 4)
					} else {
						w[c>>4] -= 1 << (c & 15 * 4)
					}
				}
			})
		})
	}
}

// BenchmarkCachedAddRemove is an Add and a Remove of the same key on a
// filter small enough to stay in the cache (capacity 20,000, 120 KB): the
// cost of the operations without their cache miss, on a shared and on an
// exclusive handle. It reserves 1 GiB of address space, not the default
// 64 GiB, so that it also runs under valgrind, whose instruction counts
// (the difference of two runs of different lengths) do not move with the
// machine's load as times do (docs/PERFORMANCE.md, "Instructions per
// operation"; bench/instructions.sh counts its instrAdd and instrRemove).
//
//	go test ./scaling -run '^$' -bench CachedAddRemove -benchtime 2000000x
func BenchmarkCachedAddRemove(b *testing.B) {
	requireFiles(b)
	const n = 10_000
	keys := getKeys(n)
	for _, mode := range []struct {
		name      string
		exclusive bool
	}{{"shared", false}, {"excl", true}} {
		b.Run(mode.name, func(b *testing.B) {
			f := cachedFilter(b, keys, n, mode.exclusive)
			var ct cpuTimer
			b.ReportAllocs()
			b.ResetTimer()
			ct.start()
			defer ct.stop(b)
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

// cachedFilter is BenchmarkCachedAddRemove's file:
// capacity 2n, keys 0 to n-1 added with their index as id, opened shared
// or exclusive, closed when b ends. It reserves 1 GiB: valgrind cannot map
// the default reservation.
func cachedFilter(b *testing.B, keys *benchKeys, n int, exclusive bool) *Filter {
	path := filepath.Join(b.TempDir(), "small.dbl")
	f, err := Create(path, &Options{Capacity: uint64(2 * n), ErrorRate: 0.01, Reserve: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	if exclusive {
		f.Close()
		if f, err = Open(path, &OpenOptions{Exclusive: true, Reserve: 1 << 30}); err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() { f.Close() })
	for i := range n {
		if err := f.Add(keys.key(i), uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
	return f
}

// BenchmarkChainRemove: a Remove, then the Add that puts the key back, in
// a chain of 10 filters (capacity 1,000, growth 1: the original's
// configuration at 10M keys, scaled down), of a key of the oldest filter
// or of the newest. The Add of an id of the oldest filter goes to its
// slack by the general path; the Remove takes the fast path either way
// (removeRoute). Its instructions, as instrRemove's inclusive count over
// b.N in callgrind (docs/PERFORMANCE.md, What each lever gained).
func BenchmarkChainRemove(b *testing.B) {
	requireFiles(b)
	const n, per = 10_000, 1_000
	for _, excl := range []bool{false, true} {
		for _, where := range []string{"oldest", "newest"} {
			b.Run(fmt.Sprintf("%s/%s", map[bool]string{false: "shared", true: "excl"}[excl], where), func(b *testing.B) {
				path := filepath.Join(b.TempDir(), "chain.dbl")
				f, err := Create(path, &Options{Capacity: per, GrowthFactor: 1, ErrorRate: 0.01, Reserve: 1 << 30})
				if err != nil {
					b.Fatal(err)
				}
				for i := range n {
					if err := f.Add(fmt.Appendf(nil, "k%d", i), uint64(i)); err != nil {
						b.Fatal(err)
					}
				}
				if err := f.Close(); err != nil {
					b.Fatal(err)
				}
				if f, err = Open(path, &OpenOptions{Exclusive: excl, Reserve: 1 << 30}); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { f.Close() })
				if got := len(f.Stats().Filters); got != n/per {
					b.Fatalf("%d filters, want %d", got, n/per)
				}
				base := 0
				if where == "newest" {
					base = n - per/2
				}
				keys := make([][]byte, per/2)
				for i := range keys {
					keys[i] = fmt.Appendf(nil, "k%d", base+i)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					j := i % len(keys)
					id := uint64(base + j)
					if err := instrRemove(f, keys[j], id); err != nil {
						b.Fatal(err)
					}
					if err := f.Add(keys[j], id); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
