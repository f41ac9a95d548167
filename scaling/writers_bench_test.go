package scaling

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// BenchmarkWriters: aggregate Add and Remove throughput of 1 and 2
// goroutines sharing one read-write handle on a file (BenchmarkMPAdd and
// BenchmarkMPRemove do the same with processes), and ("-excl") one
// exclusive handle, whose goroutines take turns at its hold. Each
// goroutine has its own keys and increasing ids; agg-ns/op is the wall
// time over all operations.
func BenchmarkWriters(b *testing.B) {
	for _, op := range []string{"add", "remove", "add-excl", "remove-excl"} {
		for _, g := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/goroutines=%d", op, g), func(b *testing.B) {
				requireFiles(b)
				excl := strings.HasSuffix(op, "-excl")
				f, err := Create(filepath.Join(b.TempDir(), "w.dbl"), &Options{Capacity: uint64(2*b.N) + 1<<16, ErrorRate: 0.01, Exclusive: excl})
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				var kb [8]byte
				f.Add(procBenchKey(1<<50, &kb), 0) // the dirty mark, before the timed part
				per := b.N / g
				add := strings.HasPrefix(op, "add")
				if !add {
					for w := range g {
						for i := range per {
							f.Add(procBenchKey(uint64(w)<<40+uint64(i), &kb), uint64(i))
						}
					}
				}
				prefault(f)
				b.ResetTimer()
				var wg sync.WaitGroup
				for w := range g {
					wg.Go(func() {
						var kb [8]byte
						for i := range per {
							key := procBenchKey(uint64(w)<<40+uint64(i), &kb)
							var err error
							if add {
								err = f.Add(key, uint64(i))
							} else {
								err = f.Remove(key, uint64(i))
							}
							if err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(g*per), "agg-ns/op")
			})
		}
	}
}
