package scaling

import (
	"math/rand/v2"
	"testing"

	"github.com/dablooms/dablooms/counting4"
)

// BenchmarkContainsBatchLayout is BenchmarkContainsBatch (file-backed) for
// Blocked512, and for a Blocked1024 filter of 10k keys (200 KB: it stays in
// the cache), whose ns/op is the lookup's work without its misses.
func BenchmarkContainsBatchLayout(b *testing.B) {
	requireFiles(b)
	for _, c := range []benchCase{
		{inFile, 1_000_000, "blocked512/1M", counting4.Blocked512},
		{inFile, 10_000_000, "blocked512/10M", counting4.Blocked512},
		{inFile, 10_000, "blocked1024/10k", counting4.Blocked1024},
	} {
		for _, order := range []string{"shuffled", "inorder"} {
			b.Run(c.name+"/"+order, func(b *testing.B) {
				f, keys := getBuilt(b, c)
				benchBatch(b, f, keys, c.size, order == "shuffled")
			})
		}
	}
}

// BenchmarkLoadFloorBlock is BenchmarkLoadFloor/independent for whole
// blocks: per op, the first word of each line of one random 128-byte-aligned
// block of a 100 MB array (addresses known in advance). "line" is one line
// (a Blocked512 block), "block1024" the two lines of a Blocked1024 block:
// the memory floor of a batch lookup of each layout.
func BenchmarkLoadFloorBlock(b *testing.B) {
	const words = 100 << 20 / 8
	mem := make([]uint64, words)
	for i := range mem {
		mem[i] = uint64(i)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	idx := make([]uint64, 1<<20)
	for i := range idx {
		idx[i] = rng.Uint64N(words/16) * 16
	}
	b.Run("line", func(b *testing.B) {
		var s uint64
		for i := 0; i < b.N; i++ {
			s += mem[idx[i&(len(idx)-1)]]
		}
		sinkFloor = s
	})
	b.Run("block1024", func(b *testing.B) {
		var s uint64
		for i := 0; i < b.N; i++ {
			j := idx[i&(len(idx)-1)]
			s += mem[j] + mem[j+8]
		}
		sinkFloor = s
	})
}
