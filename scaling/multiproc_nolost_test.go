package scaling

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/internal/childproc"
)

// Test 1: no lost update.

func noLostCfg(nstreams int, racy bool) streamCfg {
	cfg := streamCfg{Streams: nstreams, MaxLive: 12_000, RemovePct: 40, SharedPct: 30, HotPct: 10, SharedPool: 4096, HotPool: 16}
	if racy {
		cfg.HotPct, cfg.SharedPct = 90, 5 // hammer a few hot words
	}
	return cfg
}

// childStream runs two goroutines, each its own stream, on one handle. In
// racy mode (the negative control) the counters are changed with a plain,
// non-atomic read-modify-write instead of the filter's compare-and-swap.
func childStream() error {
	ctl, f, err := childStart("CTL")
	if err != nil {
		return err
	}
	defer f.Close()
	p, nprocs, ops := children.EnvInt("PROC"), children.EnvInt("NPROCS"), children.EnvU64("OPS")
	racy := children.Env("RACY") == "1"
	seed := children.EnvU64("SEED")
	cfg := noLostCfg(2*nprocs, racy)
	if err := childproc.Barrier(ctl, 0, nprocs); err != nil {
		return err
	}
	errc := make(chan error, 2)
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := newOpStream(cfg, seed, p*2+g)
			var pos [counting4.MaxK]uint64
			for i := uint64(0); i < ops; i++ {
				op := st.next()
				if racy {
					racyApply(f, seed, op, pos[:])
					continue
				}
				if err := applyOp(f, op); err != nil {
					errc <- fmt.Errorf("stream %d op %d (%+v): %w", p*2+g, i, op, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	return <-errc
}

var spinSink atomic.Uint64

// racyApply is the negative control's broken counter update: load, a short
// spin to widen the window, plain store. Concurrent updates of the same word
// from other processes are lost.
func racyApply(f *Filter, seed uint64, op streamOp, pos []uint64) {
	m := f.chain.Load().f[0]
	w := m.cf.Words()
	for _, p := range codePositions(m, seed, op.code, pos) {
		d := uint64(1) << ((p & 15) * 4)
		v := w[p>>4]
		s := uint64(0)
		for j := uint64(0); j < 40; j++ {
			s += j * v
		}
		spinSink.Store(s)
		if op.remove {
			w[p>>4] = v - d
		} else {
			w[p>>4] = v + d
		}
	}
}

type noLostResult struct {
	counters, diffCounters int
	bound                  int32
	items, wantItems       uint64
	ops                    uint64
	elapsed                time.Duration
}

func runNoLost(t *testing.T, racy bool) noLostResult {
	requireFiles(t)
	const nprocs = 4
	ops := 250_000
	if testing.Short() || racy {
		ops = 50_000 // the control needs no more to lose updates
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "nolost.dbl")
	const seed = 0x5eed_0001
	ctl := createForChildren(t, path, &Options{Capacity: 200_000, ErrorRate: 0.01, Seed: seed}, filepath.Join(dir, "ctl"))
	racyFlag := "0"
	if racy {
		racyFlag = "1"
	}
	start := time.Now()
	var procs []*childproc.Proc
	for p := 0; p < nprocs; p++ {
		procs = append(procs, children.Start(t, fmt.Sprintf("stream-%d", p), "stream",
			childproc.KV("PATH", path), childproc.KV("CTL", ctl.Name()), childproc.KV("PROC", p), childproc.KV("NPROCS", nprocs),
			childproc.KV("OPS", ops), childproc.KV("SEED", uint64(seed)), childproc.KV("RACY", racyFlag)))
	}
	childproc.WaitAll(t, ctl, procs, 5*time.Minute)
	res := noLostResult{elapsed: time.Since(start), ops: uint64(nprocs * 2 * ops)}

	// The file, as the children left it.
	ff, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ff.Close()
	fc := ff.chain.Load()
	if len(fc.f) != 1 {
		t.Fatalf("the chain grew to %d filters; the test needs a single filter", len(fc.f))
	}
	fm := fc.f[0]

	// Sequential replay of every stream, and the saturation bound over
	// every interleaving.
	cfg := noLostCfg(2*nprocs, racy)
	want := make([]int32, fm.desc.Counters)
	bound := make([]int32, fm.desc.Counters)
	for s := 0; s < 2*nprocs; s++ {
		res.wantItems += uint64(len(replayStream(fm, seed, cfg, s, uint64(ops), want, bound).live))
	}
	res.bound = maxBound(bound)
	res.counters = len(want)
	for c, w := range want {
		if got := int32(fm.cf.Get(uint64(c))); got != w {
			res.diffCounters++
			if res.diffCounters <= 5 && !racy {
				t.Logf("counter %d: file %d, replay %d", c, got, w)
			}
		}
	}
	res.items = fm.itemCount()
	return res
}

// TestMPNoLostUpdate: 4 processes × 2 goroutines of mixed Add/Remove on one
// file; every counter word must equal a sequential replay of all streams.
func TestMPNoLostUpdate(t *testing.T) {
	r := runNoLost(t, false)
	t.Logf("%d ops by 4 processes × 2 goroutines in %v (%.0f ns/op wall); %d counters compared; max counter bound %d; items %d (replay %d)",
		r.ops, r.elapsed.Round(time.Millisecond), float64(r.elapsed.Nanoseconds())/float64(r.ops), r.counters, r.bound, r.items, r.wantItems)
	if r.bound >= 15 {
		t.Fatalf("a counter may have saturated (bound %d): the replay cannot be exact; change the stream parameters", r.bound)
	}
	if r.diffCounters != 0 {
		t.Errorf("lost updates: %d counters differ from the sequential replay", r.diffCounters)
	}
	if r.items != r.wantItems {
		t.Errorf("item count %d, replay %d", r.items, r.wantItems)
	}
}

// TestMPNoLostUpdateControl is the negative control: the same check with a
// deliberately non-atomic counter update must find lost updates, or the
// check above proves nothing.
func TestMPNoLostUpdateControl(t *testing.T) {
	r := runNoLost(t, true)
	t.Logf("control: %d ops in %v; %d of %d counters differ from the replay; max counter bound %d",
		r.ops, r.elapsed.Round(time.Millisecond), r.diffCounters, r.counters, r.bound)
	if r.diffCounters == 0 {
		t.Fatal("the non-atomic control lost no update: the comparison cannot detect lost updates")
	}
}
