package scaling

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkContainsBatch looks present keys up through ContainsBatch in
// groups of 256: ns/op is per key. "shuffled" takes the keys in random order;
// "inorder" takes them in memory order (their counters are still at random
// places), which leaves out the cache miss of fetching each key's bytes —
// the caller's data, not the filter's — and is what BenchmarkLoadFloor
// compares with.
func BenchmarkContainsBatch(b *testing.B) {
	requireFiles(b)
	for _, c := range benchCases {
		for _, order := range []string{"shuffled", "inorder"} {
			b.Run(c.name+"/"+order, func(b *testing.B) {
				f, keys := getBuilt(b, c)
				benchBatch(b, f, keys, c.size, order == "shuffled")
			})
		}
	}
}

// benchBatch looks keys [0, n) up in batches of 256, in memory order or
// shuffled, and fails on a false negative.
func benchBatch(b *testing.B, f *Filter, keys *benchKeys, n int, shuffled bool) {
	const group = 256
	batch := make([][]byte, group)
	out := make([]bool, group)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += group {
		for j := range batch {
			k := (i + j) % n
			if shuffled {
				k = int(keys.perm[k])
			}
			batch[j] = keys.key(k)
		}
		f.ContainsBatch(batch, out)
		for j := range out {
			if !out[j] {
				b.Fatal("false negative")
			}
		}
	}
}

// BenchmarkHashKey is the cost of the native key hash of a 16-byte key.
func BenchmarkHashKey(b *testing.B) {
	key := []byte("key-000000123456")
	var s uint64
	for i := 0; i < b.N; i++ {
		s += HashKey(uint64(i), key)
	}
	sinkFloor = s
}

// BenchmarkContainsParallel runs Contains of present keys from GOMAXPROCS
// goroutines (go test -cpu 1,2 compares one goroutine with two).
func BenchmarkContainsParallel(b *testing.B) {
	requireFiles(b)
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			f, keys := getBuilt(b, c)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := rand.IntN(c.size)
				for pb.Next() {
					if !f.Contains(keys.key(int(keys.perm[i%c.size]))) {
						panic("false negative")
					}
					i++
				}
			})
		})
	}
}

// BenchmarkLoadFloor is the memory floor a lookup is compared with: one
// random 8-byte load from an array as large as the 10M-key file, dependent
// (each address from the previous load: pure latency) and independent
// (addresses known in advance: the loads overlap). ns/op is per load.
func BenchmarkLoadFloor(b *testing.B) {
	const words = 100 << 20 / 8 // 100 MB
	// One random cycle through every word (Sattolo's algorithm), so the
	// dependent chain never settles into a short, cached loop.
	mem := make([]uint64, words)
	for i := range mem {
		mem[i] = uint64(i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := words - 1; i > 0; i-- {
		j := rng.IntN(i)
		mem[i], mem[j] = mem[j], mem[i]
	}
	b.Run("dependent", func(b *testing.B) {
		x := uint64(0)
		for i := 0; i < b.N; i++ {
			x = mem[x]
		}
		sinkFloor = x
	})
	idx := make([]uint64, 1<<20)
	for i := range idx {
		idx[i] = rng.Uint64N(words)
	}
	b.Run("independent", func(b *testing.B) {
		var s uint64
		for i := 0; i < b.N; i++ {
			s += mem[idx[i&(len(idx)-1)]]
		}
		sinkFloor = s
	})
}

var sinkFloor uint64

// BenchmarkContainsBatchLongChain looks keys up through ContainsBatch in a
// chain longer than batchFilters (capacity 1,000 per filter, growth 1): 256
// keys per call, half present, in a stride through them. ns/op and cpu-ns/op
// are per key (thread CPU time: load on a shared machine moves it less).
func BenchmarkContainsBatchLongChain(b *testing.B) {
	for _, filters := range []int{12, 60} {
		b.Run(fmt.Sprintf("filters=%d", filters), func(b *testing.B) {
			f, err := NewMemory(&Options{Capacity: 1000, GrowthFactor: 1, Seed: 7})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			n := filters * 1000
			for i := range n {
				if err := f.Add(makeKey(nil, "key-", i), uint64(i+1)); err != nil {
					b.Fatal(err)
				}
			}
			if got := len(f.Stats().Filters); got != filters {
				b.Fatalf("%d filters, want %d", got, filters)
			}
			batch := make([][]byte, 256)
			for i := range batch {
				j := i * 7919 % n
				if i%2 == 0 {
					batch[i] = makeKey(nil, "key-", j)
				} else {
					batch[i] = makeKey(nil, "absent-", j)
				}
			}
			out := make([]bool, len(batch))
			var cpu cpuTimer
			b.ReportAllocs()
			b.ResetTimer()
			cpu.start()
			for i := 0; i < b.N; i += len(batch) {
				f.ContainsBatch(batch, out)
			}
			cpu.stopN(b, 1)
			for i := 0; i < len(batch); i += 2 {
				if !out[i] {
					b.Fatal("false negative")
				}
			}
		})
	}
}
