package scaling

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dablooms/dablooms/counting4"
)

// batchBenchCase is a file-backed filter for BenchmarkContainsBatchLayout:
// the keys and options of BenchmarkContainsBatch with another layout or size.
type batchBenchCase struct {
	layout counting4.Layout
	size   int
}

var (
	batchBuiltMu sync.Mutex
	batchBuilt   = map[batchBenchCase]*Filter{}
)

func batchGetBuilt(b *testing.B, c batchBenchCase) (*Filter, *t2BenchKeys) {
	keys := t2GetKeys(c.size)
	batchBuiltMu.Lock()
	defer batchBuiltMu.Unlock()
	if f, ok := batchBuilt[c]; ok {
		return f, keys
	}
	o := t2BenchOptions(c.size)
	o.Layout = c.layout
	f, err := Create(filepath.Join(b.TempDir(), "batch.dbl"), o)
	if err != nil {
		b.Fatal(err)
	}
	for i := range c.size {
		if err := f.Add(keys.key(i), uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
	batchBuilt[c] = f
	return f, keys
}

// BenchmarkContainsBatchLayout is BenchmarkContainsBatch (file-backed) for
// Blocked512, and for a Blocked1024 filter of 10k keys (200 KB: it stays in
// the cache), whose ns/op is the lookup's work without its misses.
func BenchmarkContainsBatchLayout(b *testing.B) {
	for _, c := range []batchBenchCase{
		{counting4.Blocked512, 1_000_000},
		{counting4.Blocked512, 10_000_000},
		{counting4.Blocked1024, 10_000},
	} {
		for _, order := range []string{"shuffled", "inorder"} {
			name := fmt.Sprintf("%v/%s/%s", c.layout, sizeName(c.size), order)
			b.Run(name, func(b *testing.B) {
				f, keys := batchGetBuilt(b, c)
				benchBatch(b, f, keys, c.size, order == "shuffled")
			})
		}
	}
}

func sizeName(n int) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprint(n/1_000_000, "M")
	case n >= 1_000:
		return fmt.Sprint(n/1_000, "k")
	}
	return fmt.Sprint(n)
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
