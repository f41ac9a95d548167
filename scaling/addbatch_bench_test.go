package scaling

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// BenchmarkAddBatchKey times adding n keys (ids rising) into a fresh
// store pre-sized for them, per key: with AddBatch ("batch", in batches of
// 4096 keys, as dabloomsctl add --from) and with Add in a loop ("loop"), on
// a shared handle and on an exclusive one ("excl-"); and on the exclusive
// one in batches that are swept (excl-batch64k, excl-batchall).
// One iteration adds every key, so use -benchtime 1x (and -count):
//
//	go test ./scaling -run '^$' -bench AddBatchKey -benchtime 1x -count 3
func BenchmarkAddBatchKey(b *testing.B) {
	requireFiles(b)
	for _, n := range []int{1_000_000, 10_000_000} {
		if testing.Short() && n > 1_000_000 {
			continue
		}
		keys, ids := batchKeys("b", n)
		// excl-batch64k and excl-batchall: batches long enough to be swept
		// (sweep.go): 65536 keys, and the whole load in one call.
		for _, mode := range []string{"loop", "batch", "excl-loop", "excl-batch", "excl-batch64k", "excl-batchall"} {
			b.Run(fmt.Sprintf("%s/%dM", mode, n/1_000_000), func(b *testing.B) {
				var ct cpuTimer
				for range b.N {
					b.StopTimer()
					f, err := Create(filepath.Join(b.TempDir(), "b.dbl"), &Options{Capacity: uint64(n), ErrorRate: 0.01,
						Exclusive: strings.HasPrefix(mode, "excl-")})
					if err != nil {
						b.Fatal(err)
					}
					runtime.GC() // the keys' allocation's GC must not run in the timed loop
					b.StartTimer()
					ct.start()
					if strings.HasSuffix(mode, "loop") {
						for i := range keys {
							if err := f.Add(keys[i], ids[i]); err != nil {
								b.Fatal(err)
							}
						}
					} else {
						size := map[string]int{"excl-batch64k": 1 << 16, "excl-batchall": n}[mode]
						if size == 0 {
							size = 4096
						}
						for i := 0; i < n; i += size {
							j := min(i+size, n)
							if err := f.AddBatch(keys[i:j], ids[i:j]); err != nil {
								b.Fatal(err)
							}
						}
					}
					ct.stopN(b, n)
					b.StopTimer()
					f.Close()
					b.StartTimer()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/key")
			})
		}
	}
}
