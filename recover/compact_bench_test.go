package recover

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/dablooms/dablooms/scaling"
)

// BenchmarkLongChainLookup measures lookups on a chain of 60 filters (1,000
// keys each, growth 1, the other parameters the defaults) before and after
// Compact: Contains of present and of absent keys (ns per key), and
// ContainsBatch of 256 keys, half present (ns per batch; ns/key reported
// too).
//
//	go test -run '^$' -bench LongChain -count 3 ./recover
func BenchmarkLongChainLookup(b *testing.B) {
	const filters, capy = 60, 1000
	const n = filters * capy
	dir := b.TempDir()
	path := filepath.Join(dir, "before.dbl")
	f, err := scaling.Create(path, &scaling.Options{Capacity: capy, GrowthFactor: 1, Seed: 7, Reserve: 1 << 32})
	if err != nil {
		b.Fatal(err)
	}
	keys := make([][]byte, n)
	ids := make([]uint64, n)
	for i := range keys {
		keys[i], ids[i] = key(i+1), uint64(i+1)
	}
	if err := f.AddBatch(keys, ids); err != nil {
		b.Fatal(err)
	}
	f.Flush()
	got := len(f.Stats().Filters)
	f.Close()
	if got != filters {
		b.Fatalf("%d filters, want %d", got, filters)
	}
	after := filepath.Join(dir, "after.dbl")
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(after, data, 0o644); err != nil {
		b.Fatal(err)
	}
	rep, err := Compact(after, keysSource(n), nil)
	if err != nil || rep.FiltersAfter != 1 {
		b.Fatalf("compact: %v", err)
	}
	absent := make([][]byte, n)
	for i := range absent {
		absent[i] = []byte(fmt.Sprintf("absent-%08d", i))
	}
	batch := make([][]byte, 256)
	for i := range batch {
		if i%2 == 0 {
			batch[i] = keys[(i*7919)%n]
		} else {
			batch[i] = absent[(i*7919)%n]
		}
	}
	out := make([]bool, len(batch))

	for _, c := range []struct{ name, path string }{{"before", path}, {"after", after}} {
		f, err := scaling.Open(c.path, &scaling.OpenOptions{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		name := fmt.Sprintf("filters=%d/%s", filters, c.name)
		b.Run(name+"/present", func(b *testing.B) {
			for i := range b.N {
				if !f.Contains(keys[(i*7919)%n]) {
					b.Fatal("false negative")
				}
			}
		})
		b.Run(name+"/absent", func(b *testing.B) {
			for i := range b.N {
				f.Contains(absent[(i*7919)%n])
			}
		})
		b.Run(name+"/batch256", func(b *testing.B) {
			for range b.N {
				f.ContainsBatch(batch, out)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/key")
		})
		f.Close()
	}
}

// BenchmarkCompact measures Compact of a file from a Source of 1M keys
// (the capacity given, so one pass): the time per key of building,
// flushing, verifying and renaming the compacted file.
//
//	go test -run '^$' -bench 'Compact$' -benchtime 3x ./recover
func BenchmarkCompact(b *testing.B) {
	const n = 1_000_000
	dir := b.TempDir()
	path := filepath.Join(dir, "c.dbl")
	f, err := scaling.Create(path, &scaling.Options{Capacity: n})
	if err != nil {
		b.Fatal(err)
	}
	f.Close()
	src := func(firstID, lastID uint64, add func(key []byte, id uint64) error) error {
		var buf []byte
		for i := range n {
			buf = fmt.Appendf(buf[:0], "key-%d", i)
			if err := add(buf, uint64(i)); err != nil {
				return err
			}
		}
		return nil
	}
	b.ResetTimer()
	for range b.N {
		if _, err := Compact(path, src, &CompactOptions{Capacity: n}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/key")
}
