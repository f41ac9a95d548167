package scaling

// Multi-process benchmarks: Add and Contains throughput with one and two
// processes on one file (the second process is a re-executed child running
// the same loop for the benchmark's duration), and the cost of the slot
// bookkeeping per Add.

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/internal/childproc"
)

// Words of the benchmark control file.
const (
	procBenchReady = 8
	procBenchStop  = 16
	procBenchCount = 24 // the child's completed operations, updated as it goes
	procBenchGo    = 32 // set by the parent: an Add or Remove child starts its quota
)

const procBenchPrefill = 200_000 // keys in the file for the Contains benchmarks

// prefault writes every page of every filter once (adding 0), so the
// timed loops measure operations, not the first-touch page faults of a fresh
// file.
func prefault(f *Filter) {
	for _, m := range f.chain.Load().f {
		w := m.cf.Words()
		for i := 0; i < len(w); i += 512 {
			atomic.AddUint64(&w[i], 0)
		}
	}
}

func procBenchKey(i uint64, buf *[8]byte) []byte {
	binary.LittleEndian.PutUint64(buf[:], i*0x9E3779B97F4A7C15)
	return buf[:]
}

// childBench runs the benchmark loop (Add or Contains) until told to stop.
// An Add child stops adding after QUOTA keys (the file is sized for it).
func childBench() error {
	ctl, f, err := childStart("CTL")
	if err != nil {
		return err
	}
	defer f.Close()
	op, quota, keyBase := children.Env("OP"), children.EnvU64("QUOTA"), children.EnvU64("KEYBASE")
	var kb [8]byte
	if op == "add" || op == "remove" {
		f.Add(procBenchKey(keyBase+quota, &kb), 0) // the dirty mark, before the timed part
	}
	ctl.Store(procBenchReady, 1)
	if op != "contains" {
		for ctl.Load(procBenchGo) == 0 {
			runtime.Gosched()
		}
	}
	var n uint64
	for ctl.Load(procBenchStop) == 0 {
		switch op {
		case "add":
			if n >= quota {
				time.Sleep(time.Millisecond)
				continue
			}
			for j := 0; j < 256; j++ {
				if err := f.Add(procBenchKey(keyBase+n, &kb), n); err != nil {
					return err
				}
				n++
			}
		case "remove":
			if n >= quota {
				time.Sleep(time.Millisecond)
				continue
			}
			for j := 0; j < 256 && n < quota; j++ {
				if err := f.Remove(procBenchKey(keyBase+n, &kb), n); err != nil {
					return fmt.Errorf("remove %d: %w", n, err)
				}
				n++
			}
			for j := 0; j < 256; j++ {
				f.Contains(procBenchKey(n%(2*procBenchPrefill), &kb))
				n++
			}
		default:
			return fmt.Errorf("unknown op %q", op)
		}
		ctl.Store(procBenchCount, n)
	}
	return nil
}

// procBenchRun times body(b.N) on a fresh file while `procs-1` children run
// the same kind of loop on the file. It reports the child's throughput as
// child-ns/op.
func procBenchRun(b *testing.B, procs int, op string, prefill bool, body func(f *Filter, n int)) {
	requireFiles(b)
	dir := b.TempDir()
	path := filepath.Join(dir, "bench.dbl")
	capacity := uint64(procBenchPrefill)
	if op == "add" || op == "remove" {
		capacity = min(uint64(b.N)*uint64(procs)+1<<16, 1<<25)
	}
	f, err := Create(path, &Options{Capacity: capacity, ErrorRate: 0.01})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var kb [8]byte
	switch {
	case op == "remove":
		// Both processes' keys, for them to remove.
		keys := make([][]byte, 0, 1024)
		ids := make([]uint64, 0, 1024)
		for _, base := range []uint64{0, 1 << 40}[:procs] {
			for i := uint64(0); i < uint64(b.N); i++ {
				keys = append(keys, procBenchKey(base+i, new([8]byte)))
				ids = append(ids, i)
				if len(keys) == cap(keys) || i == uint64(b.N)-1 {
					if err := f.AddBatch(keys, ids); err != nil {
						b.Fatal(err)
					}
					keys, ids = keys[:0], ids[:0]
				}
			}
		}
	case prefill:
		for i := uint64(0); i < procBenchPrefill; i++ {
			f.Add(procBenchKey(i, &kb), i)
		}
	default:
		f.Add(procBenchKey(1<<50, &kb), 0) // the dirty mark, before the timed part
	}
	prefault(f)
	var ctl *childproc.Shm
	var child *childproc.Proc
	if procs == 2 {
		if ctl, err = childproc.MapShm(filepath.Join(dir, "ctl"), childproc.CtlWords, true); err != nil {
			b.Fatal(err)
		}
		defer ctl.Close()
		child = children.Start(b, "bench", "bench", childproc.KV("PATH", path), childproc.KV("CTL", ctl.Name()), childproc.KV("OP", op),
			childproc.KV("QUOTA", b.N), childproc.KV("KEYBASE", uint64(1)<<40))
		childproc.Await(b, child, func() bool { return ctl.Load(procBenchReady) != 0 })
	}
	var c0 uint64
	if ctl != nil {
		c0 = ctl.Load(procBenchCount)
	}
	start := time.Now()
	b.ResetTimer()
	if ctl != nil && op != "contains" {
		ctl.Store(procBenchGo, 1)
	}
	body(f, b.N)
	if ctl != nil && op != "contains" {
		// Both quotas done: the aggregate throughput of the two.
		for ctl.Load(procBenchCount) < uint64(b.N) {
			runtime.Gosched()
		}
	}
	b.StopTimer()
	el := time.Since(start)
	if op != "contains" {
		b.ReportMetric(float64(el.Nanoseconds())/float64(procs*b.N), "agg-ns/op")
	}
	if ctl != nil && op == "contains" {
		c1 := ctl.Load(procBenchCount)
		ctl.Store(procBenchStop, 1)
		childproc.WaitAll(b, nil, []*childproc.Proc{child}, time.Minute)
		if c1 > c0 {
			b.ReportMetric(float64(el.Nanoseconds())/float64(c1-c0), "child-ns/op")
		}
	}
	if op != "contains" && len(f.Stats().Filters) != 1 {
		b.Logf("note: the chain grew to %d filters", len(f.Stats().Filters))
	}
}

func BenchmarkMPAdd(b *testing.B) {
	for _, procs := range []int{1, 2} {
		b.Run(fmt.Sprintf("procs=%d", procs), func(b *testing.B) {
			procBenchRun(b, procs, "add", false, func(f *Filter, n int) {
				var kb [8]byte
				for i := 0; i < n; i++ {
					if err := f.Add(procBenchKey(uint64(i), &kb), uint64(i)); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkMPRemove removes b.N keys in this process while, with procs=2,
// a child removes its own b.N keys from the same filter.
func BenchmarkMPRemove(b *testing.B) {
	for _, procs := range []int{1, 2} {
		b.Run(fmt.Sprintf("procs=%d", procs), func(b *testing.B) {
			procBenchRun(b, procs, "remove", false, func(f *Filter, n int) {
				var kb [8]byte
				for i := 0; i < n; i++ {
					if err := f.Remove(procBenchKey(uint64(i), &kb), uint64(i)); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

func BenchmarkMPContains(b *testing.B) {
	for _, procs := range []int{1, 2} {
		b.Run(fmt.Sprintf("procs=%d", procs), func(b *testing.B) {
			procBenchRun(b, procs, "contains", true, func(f *Filter, n int) {
				var kb [8]byte
				hits := 0
				for i := 0; i < n; i++ {
					if f.Contains(procBenchKey(uint64(i)%(2*procBenchPrefill), &kb)) {
						hits++
					}
				}
				if n >= 4*procBenchPrefill && hits < n/2 {
					b.Fatalf("only %d of %d lookups hit", hits, n)
				}
			})
		})
	}
}

// BenchmarkMPAddOverhead isolates the cost of the slot bookkeeping: Add on a
// file-backed filter (guard, chain check, in-flight record claim, hash store
// and finish, dirty check, id range, item count) against counting4's AddAt
// with a nil Record on the same kind of file's words, with the same hashing
// and positions. The difference is the bookkeeping. The filter is small
// (cache-resident, so memory latency does not drown the difference) and is
// zeroed outside the timer every overheadRound adds, so no counter
// saturates and the chain never grows.
func BenchmarkMPAddOverhead(b *testing.B) {
	requireFiles(b)
	const capacity = 1 << 15
	newFile := func(b *testing.B) (*Filter, *member) {
		f, err := Create(filepath.Join(b.TempDir(), "o.dbl"), &Options{Capacity: capacity, ErrorRate: 0.01})
		if err != nil {
			b.Fatal(err)
		}
		var kb [8]byte
		f.Add(procBenchKey(1<<50, &kb), 0) // the dirty mark, before the timed part
		prefault(f)
		return f, f.chain.Load().f[0]
	}
	// loop runs add for b.N keys, resetting the counters every round.
	loop := func(b *testing.B, m *member, add func(i uint64)) {
		w := m.cf.Words()
		reset := func() {
			for i := range w {
				atomic.StoreUint64(&w[i], 0)
			}
			atomic.StoreUint64(&m.line.Items, 0)
			if m.own != nil {
				atomic.StoreUint64(m.own, 0)
			}
		}
		reset()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if i%overheadRound == overheadRound-1 {
				b.StopTimer()
				reset()
				b.StartTimer()
			}
			add(uint64(i))
		}
	}
	b.Run("file-Add", func(b *testing.B) {
		f, m := newFile(b)
		defer f.Close()
		var kb [8]byte
		loop(b, m, func(i uint64) { f.Add(procBenchKey(i, &kb), i) })
	})
	b.Run("file-AddAt-nilRecord", func(b *testing.B) {
		f, m := newFile(b)
		defer f.Close()
		seed := f.params.Seed
		var kb [8]byte
		var pos [counting4.MaxK]uint64
		p := pos[:m.desc.K]
		loop(b, m, func(i uint64) {
			m.cf.Positions(m.keyHash(hashes{native: HashKey(seed, procBenchKey(i, &kb))}), p)
			m.cf.AddAt(p, nil)
		})
	})
	b.Run("file-AddAt-heapRecord", func(b *testing.B) {
		f, m := newFile(b)
		defer f.Close()
		seed := f.params.Seed
		var kb [8]byte
		var pos [counting4.MaxK]uint64
		var chg, dbt uint64
		rec := &counting4.Record{Changed: &chg, Doubt: &dbt}
		p := pos[:m.desc.K]
		loop(b, m, func(i uint64) {
			m.cf.Positions(m.keyHash(hashes{native: HashKey(seed, procBenchKey(i, &kb))}), p)
			m.cf.AddAt(p, rec)
			chg = 0
		})
	})
	b.Run("memory-Add", func(b *testing.B) {
		f, err := NewMemory(&Options{Capacity: capacity, ErrorRate: 0.01})
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		var kb [8]byte
		f.Add(procBenchKey(1<<50, &kb), 0)
		loop(b, f.chain.Load().f[0], func(i uint64) { f.Add(procBenchKey(i, &kb), i) })
	})
}

const overheadRound = 1 << 14 // adds between resets: half the capacity
