package scaling

// Benchmarks (not run by plain go test; use -bench). Keys are `key-%012d`
// (16 bytes); a filter of size n has capacity n (ErrorRate 0.01) and holds
// keys [0, n) with id = index; absent keys are [n, 2n). Queries and removals
// go in a shuffled order. Built filters are cached per process (sync.Once per
// mode and size) because a 10M-key filter takes seconds to fill; a cached
// file lives in the b.TempDir of the benchmark that built it, and stays
// usable through its mapping after that directory is removed.
//
//	go test ./scaling -run '^$' -bench . -benchtime 1x      (sanity)
//	go test ./scaling -run '^$' -bench 'Contains|Remove|Add' -benchtime 2s

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
)

const benchKeyLen = 16 // len("key-000000000000")

type benchCase struct {
	mode   storeMode
	size   int
	name   string
	layout counting4.Layout
}

var benchCases = []benchCase{
	{inFile, 1_000_000, "file/1M", counting4.Blocked1024},
	{inFile, 10_000_000, "file/10M", counting4.Blocked1024},
	{inMemory, 1_000_000, "memory/1M", counting4.Blocked1024},
}

// benchKeys holds 2n keys back to back (no per-key allocation) and a
// shuffled order of [0, n).
type benchKeys struct {
	buf  []byte
	perm []int32
}

func (k *benchKeys) key(i int) []byte {
	return k.buf[i*benchKeyLen : (i+1)*benchKeyLen : (i+1)*benchKeyLen]
}

var (
	keysMu    sync.Mutex
	keysCache = map[int]*benchKeys{}
)

func getKeys(n int) *benchKeys {
	keysMu.Lock()
	defer keysMu.Unlock()
	if k, ok := keysCache[n]; ok {
		return k
	}
	k := &benchKeys{buf: make([]byte, 0, 2*n*benchKeyLen), perm: make([]int32, n)}
	for i := range 2 * n {
		k.buf = appendKey(k.buf, "key-", i)
	}
	if len(k.buf) != 2*n*benchKeyLen {
		panic("bench keys are not 16 bytes each")
	}
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	for i := range k.perm {
		k.perm[i] = int32(i)
	}
	rng.Shuffle(n, func(i, j int) { k.perm[i], k.perm[j] = k.perm[j], k.perm[i] })
	keysCache[n] = k
	return k
}

type builtFilter struct {
	once  sync.Once
	f     *Filter
	err   error
	took  time.Duration
	bytes int64
}

var (
	builtMu    sync.Mutex
	builtCache = map[benchCase]*builtFilter{}
)

func benchOptions(c benchCase) *Options {
	return &Options{Capacity: uint64(c.size), ErrorRate: 0.01, Seed: 0xbe7c4, Layout: c.layout}
}

// getBuilt returns the cached filter of case c holding keys [0, n).
func getBuilt(b *testing.B, c benchCase) (*Filter, *benchKeys) {
	requireFiles(b)
	keys := getKeys(c.size)
	builtMu.Lock()
	e, ok := builtCache[c]
	if !ok {
		e = &builtFilter{}
		builtCache[c] = e
	}
	builtMu.Unlock()
	e.once.Do(func() {
		start := time.Now()
		var f *Filter
		var err error
		if c.mode == inFile {
			f, err = Create(filepath.Join(b.TempDir(), "bench.dbl"), benchOptions(c))
		} else {
			f, err = NewMemory(benchOptions(c))
		}
		if err != nil {
			e.err = err
			return
		}
		for i := range c.size {
			if err := f.Add(keys.key(i), uint64(i)); err != nil {
				e.err = err
				return
			}
		}
		if err := f.Flush(); err != nil {
			e.err = err
			return
		}
		e.f, e.took, e.bytes = f, time.Since(start), f.Stats().FileSize
	})
	if e.err != nil {
		b.Fatalf("building %s: %v", c.name, e.err)
	}
	return e.f, keys
}

// BenchmarkAdd adds keys with increasing ids to a fresh filter of capacity
// n; past n adds the chain grows (as it would in use).
func BenchmarkAdd(b *testing.B) {
	requireFiles(b)
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			keys := getKeys(c.size)
			f, _ := newStore(b, c.mode, benchOptions(c))
			n := 2 * c.size
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := f.Add(keys.key(i%n), uint64(i)); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(len(f.Stats().Filters)), "filters")
		})
	}
}

// BenchmarkRMWFloor is the floor an Add is compared with: one atomic
// read-modify-write (a lock-prefixed add, as a counter CAS is) on a random
// word of a 100 MB array, the addresses known in advance. A locked
// instruction waits for its line and keeps later loads from passing it, so
// unlike plain loads (BenchmarkLoadFloor/independent) these do not overlap.
// "plain" is the same update without the lock prefix, for comparison.
func BenchmarkRMWFloor(b *testing.B) {
	const words = 100 << 20 / 8
	mem := make([]uint64, words)
	rng := rand.New(rand.NewPCG(3, 4))
	idx := make([]uint64, 1<<20)
	for i := range idx {
		idx[i] = rng.Uint64N(words)
	}
	for i := range mem { // fault the pages in first
		mem[i] = uint64(i)
	}
	b.Run("atomic", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			atomic.AddUint64(&mem[idx[i&(len(idx)-1)]], 1)
		}
	})
	b.Run("plain", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			mem[idx[i&(len(idx)-1)]]++
		}
	})
	// One word in L1: the cost of the lock prefix alone, which every
	// bookkeeping step of an Add that must be atomic pays.
	b.Run("atomic-cached", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			atomic.AddUint64(&mem[0], 1)
		}
	})
}

// BenchmarkContainsPresent asks for added keys in shuffled order.
func BenchmarkContainsPresent(b *testing.B) {
	requireFiles(b)
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			f, keys := getBuilt(b, c)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if !f.Contains(keys.key(int(keys.perm[i%c.size]))) {
					b.Fatal("false negative")
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(f.Stats().FileSize)/float64(c.size), "bytes/key")
		})
	}
}

// BenchmarkContainsAbsent asks for keys never added, in shuffled order.
func BenchmarkContainsAbsent(b *testing.B) {
	requireFiles(b)
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			f, keys := getBuilt(b, c)
			fp := 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if f.Contains(keys.key(c.size + int(keys.perm[i%c.size]))) {
					fp++
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(fp)/float64(b.N), "fpr")
		})
	}
}

// BenchmarkRemove removes added keys in shuffled order. Once every key has
// been removed they are all added back with the timer stopped, and so are
// the removed ones at the end, so the cached filter stays whole.
func BenchmarkRemove(b *testing.B) {
	requireFiles(b)
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			f, keys := getBuilt(b, c)
			restore := func(upto int) {
				for j := range upto {
					k := int(keys.perm[j])
					if err := f.Add(keys.key(k), uint64(k)); err != nil {
						b.Fatal(err)
					}
				}
			}
			removed := 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if removed == c.size {
					b.StopTimer()
					restore(removed)
					removed = 0
					b.StartTimer()
				}
				k := int(keys.perm[removed])
				if err := f.Remove(keys.key(k), uint64(k)); err != nil {
					b.Fatalf("Remove(%s): %v", keys.key(k), err)
				}
				removed++
			}
			b.StopTimer()
			restore(removed)
		})
	}
}

// BenchmarkFlush measures Flush of the 1M-key file after k changes (made
// with the timer stopped: k keys removed, and at the next iteration added
// back).
func BenchmarkFlush(b *testing.B) {
	requireFiles(b)
	c := benchCases[0]
	for _, k := range []int{1, 100, 10_000, 100_000} {
		b.Run(fmt.Sprintf("%s/changes=%d", c.name, k), func(b *testing.B) {
			f, keys := getBuilt(b, c)
			if err := f.Flush(); err != nil {
				b.Fatal(err)
			}
			out := false // whether perm[0:k] are removed
			flip := func() {
				for j := range k {
					key := int(keys.perm[j])
					var err error
					if out {
						err = f.Add(keys.key(key), uint64(key))
					} else {
						err = f.Remove(keys.key(key), uint64(key))
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				out = !out
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				flip()
				b.StartTimer()
				if err := f.Flush(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if f.DiskSeqnum() == 0 || f.Condition() != Clean {
				b.Fatalf("after Flush: disk %d, %v", f.DiskSeqnum(), f.Condition())
			}
			if out {
				flip()
				f.Flush()
			}
		})
	}
}

// BenchmarkOpen opens (and closes) a file whose first filter is about 1 GB
// and empty. Open must not read the counters. The page cache tells: with
// the file's pages evicted, Open may bring in no more counter pages than
// the kernel's read-around brings in when anything touches the header page
// (8 MB with read_ahead_kb = 8192), far from the 1 GB a scan would.
func BenchmarkOpen(b *testing.B) {
	requireFiles(b)
	const capacity = 134_000_000 // ≈ 8.02 bytes per key at the first filter's 0.2 %
	path := filepath.Join(b.TempDir(), "big.dbl")
	start := time.Now()
	f, err := Create(path, &Options{Capacity: capacity, ErrorRate: 0.01, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	size := f.Stats().FileSize
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	b.Logf("created %s: %d bytes (%.2f GiB) in %v", path, size, float64(size)/(1<<30), time.Since(start))
	counters := func() int {
		n, err := residentPages(path, header.DataOffset, size-header.DataOffset)
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
	// The kernel's read-around for a touch of the header page.
	evictPageCache(b, path)
	touchHeader(b, path)
	readAround := counters()
	for _, ro := range []bool{false, true} {
		b.Run(fmt.Sprintf("1GB/readonly=%v", ro), func(b *testing.B) {
			evictPageCache(b, path)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				g, err := Open(path, &OpenOptions{ReadOnly: ro})
				if err != nil {
					b.Fatal(err)
				}
				if err := g.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cached := counters()
			b.ReportMetric(float64(cached)*float64(os.Getpagesize())/(1<<20), "counter-MB-cached")
			if cached > readAround {
				b.Fatalf("%d counter pages in the page cache after Open, read-around of the header alone: %d", cached, readAround)
			}
		})
	}
}
