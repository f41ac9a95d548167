package scaling

import (
	"path/filepath"
	"testing"
	"time"
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
	b.Run("add", func(b *testing.B) {
		if b.N > n {
			b.Skip("at most 1M adds (one pass)")
		}
		f, err := Create(filepath.Join(b.TempDir(), "orig.dbl"), opts())
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		var ct cpuTimer
		b.ReportAllocs()
		b.ResetTimer()
		ct.start()
		for i := 0; i < b.N; i++ {
			if err := f.Add(keys.key(i), uint64(i)); err != nil {
				b.Fatal(err)
			}
		}
		ct.stop(b)
	})
	b.Run("remove", func(b *testing.B) {
		if b.N > n {
			b.Skip("at most 1M removes (one pass)")
		}
		f, err := Create(filepath.Join(b.TempDir(), "orig.dbl"), opts())
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		for i := 0; i < b.N; i++ {
			if err := f.Add(keys.key(i), uint64(i)); err != nil {
				b.Fatal(err)
			}
		}
		var ct cpuTimer
		b.ReportAllocs()
		b.ResetTimer()
		ct.start()
		for i := 0; i < b.N; i++ {
			if err := f.Remove(keys.key(i), uint64(i)); err != nil {
				b.Fatal(err)
			}
		}
		ct.stop(b)
	})
}

// BenchmarkOrigFloor is the floor of BenchmarkOrigConfig/remove and /add:
// the same keys and filter, but only what the counters need — hash,
// prepare, and the counter update without a record (remove: after the
// presence test a Remove makes) — none of the bookkeeping that makes an
// operation recoverable, exact and safe with other writers.
func BenchmarkOrigFloor(b *testing.B) {
	requireFiles(b)
	const n = 1_000_000
	keys := getKeys(n)
	if b.N > n {
		b.Skip("at most 1M keys (one pass)")
	}
	f, err := Create(filepath.Join(b.TempDir(), "orig.dbl"), &Options{Capacity: 1_000_000, ErrorRate: 0.01, GrowthFactor: 1, TighteningRatio: 0.5})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	m := f.chain.Load().f[0]
	seed := f.params.Seed
	var ct cpuTimer
	b.ResetTimer()
	ct.start()
	for i := 0; i < b.N; i++ {
		p := m.cf.Prepare(HashKey(seed, keys.key(i)) + m.salt)
		m.cf.AddProbe(p, nil)
	}
	ct.stop(b)
	ct.start()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		p := m.cf.Prepare(HashKey(seed, keys.key(i)) + m.salt)
		if !m.cf.ContainsProbe(p) || !m.cf.RemoveProbe(p, nil) {
			b.Fatal("not present")
		}
	}
	b.ReportMetric(float64(time.Since(start))/float64(b.N), "remove-ns/op")
	ct.stop(b)
}

// BenchmarkCachedAddRemove is an Add and a Remove of the same key on a
// filter small enough to stay in the cache (capacity 20,000, 120 KB): the
// cost of the operations without their cache miss.
//
//	go test ./scaling -run '^$' -bench CachedAddRemove -benchtime 2000000x
func BenchmarkCachedAddRemove(b *testing.B) {
	requireFiles(b)
	const n = 10_000
	keys := getKeys(n)
	f, err := Create(filepath.Join(b.TempDir(), "small.dbl"), &Options{Capacity: 2 * n, ErrorRate: 0.01})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for i := range n {
		if err := f.Add(keys.key(i), uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
	var ct cpuTimer
	b.ReportAllocs()
	b.ResetTimer()
	ct.start()
	defer ct.stop(b)
	for i := 0; i < b.N; i++ {
		k := keys.key(i % n)
		if err := f.Add(k, uint64(n+i)); err != nil {
			b.Fatal(err)
		}
		if err := f.Remove(k, uint64(n+i)); err != nil {
			b.Fatal(err)
		}
	}
}
