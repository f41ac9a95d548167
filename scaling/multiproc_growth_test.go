package scaling

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/childproc"
)

// Test 2: growth under load.

type filterView struct {
	Index                  int
	Offset, Bytes          int64
	Capacity, Counters     uint64
	K                      int
	FirstID, LastID, Count uint64
}

type chainView struct {
	FileSize int64
	Filters  []filterView
}

type growReport struct {
	AfterAdd, AfterRemove chainView
	Missing               int    // added keys (of every process) Contains did not find
	Ambiguous             int    // keys to remove that two filters of their id range hold
	RemoveErrs            int    // failed removes
	FirstRemoveErr        string // the first failure
	StaleAddsRaced        int    // adds whose chain was stale when they started
}

func chainViewOf(f *Filter) chainView {
	s := f.Stats()
	v := chainView{FileSize: s.FileSize}
	for _, fs := range s.Filters {
		v.Filters = append(v.Filters, filterView{fs.Index, fs.Offset, fs.Bytes, fs.Capacity, fs.Counters, fs.K, fs.FirstID, fs.LastID, fs.Count})
	}
	return v
}

func growKey(p, i int) []byte { return []byte(fmt.Sprintf("grow-%d-%07d", p, i)) }

func childGrow() error {
	ctl, err := childproc.MapShm(children.Env("CTL"), childproc.CtlWords, false)
	if err != nil {
		return err
	}
	p, nprocs, n := children.EnvInt("PROC"), children.EnvInt("NPROCS"), children.EnvInt("KEYS")
	f, err := Open(children.Env("PATH"), nil)
	if err != nil {
		return err
	}
	defer f.Close()
	var rep growReport
	if err := childproc.Barrier(ctl, 0, nprocs); err != nil {
		return err
	}
	// Phase 1: interleaved increasing ids: process p adds key i with id i*nprocs+p.
	for i := 0; i < n; i++ {
		if atomic.LoadUint64(f.published) > uint64(len(f.chain.Load().f)) {
			rep.StaleAddsRaced++
		}
		if err := f.Add(growKey(p, i), uint64(i*nprocs+p)); err != nil {
			return fmt.Errorf("add %d: %w", i, err)
		}
	}
	if err := childproc.Barrier(ctl, 1, nprocs); err != nil {
		return err
	}
	// Phase 2: every process reports its view and looks up every key.
	rep.AfterAdd = chainViewOf(f)
	for q := 0; q < nprocs; q++ {
		for i := 0; i < n; i++ {
			if !f.Contains(growKey(q, i)) {
				rep.Missing++
			}
		}
	}
	victim := (p + 1) % nprocs
	c := f.chain.Load()
	var pos [counting4.MaxK]uint64
	for i := 0; i < n; i++ {
		h := hashes{native: HashKey(f.params.Seed, growKey(victim, i))}
		id := uint64(i*nprocs + victim)
		hits := 0
		for _, m := range c.f {
			if id < atomic.LoadUint64(&m.line.MinID) || id > atomic.LoadUint64(&m.line.MaxID)&header.MaxID {
				continue
			}
			pp := pos[:m.desc.K]
			m.cf.Positions(m.keyHash(h), pp)
			if m.cf.ContainsAt(pp) {
				hits++
			}
		}
		if hits > 1 {
			rep.Ambiguous++
		}
	}
	if err := childproc.Barrier(ctl, 2, nprocs); err != nil {
		return err
	}
	// Phase 3: remove the keys another process added, with their ids.
	for i := 0; i < n; i++ {
		if err := f.Remove(growKey(victim, i), uint64(i*nprocs+victim)); err != nil {
			if rep.RemoveErrs == 0 {
				rep.FirstRemoveErr = fmt.Sprintf("key %d of process %d: %v", i, victim, err)
			}
			rep.RemoveErrs++
		}
	}
	if err := childproc.Barrier(ctl, 3, nprocs); err != nil {
		return err
	}
	rep.AfterRemove = chainViewOf(f)
	b, err := json.Marshal(&rep)
	if err != nil {
		return err
	}
	return os.WriteFile(children.Env("REPORT"), b, 0o644)
}

// TestMPGrowthUnderLoad: 4 processes add with interleaved ids to a file with
// capacity 2,000 so that the chain grows at least 5 times under load. Every
// process must then see the same directory, find every key, and remove the
// keys another process added (routing by id must be the same everywhere,
// also for adds that raced a growth); the file must end where the last
// filter ends and hold only zero counters.
//
// The processes run at different speeds, so ids arrive far out of order
// across filters; a key that is also a false positive of another filter
// whose id range holds its id makes its Remove ambiguous (ErrAmbiguous), a
// property of any counting filter chain, not of the multi-process code. A
// very low error rate (1e-9; at 1e-6 about one run in ten met one) makes
// that negligible; the children count such keys
// ("ambiguous") so a failure can be told apart.
func TestMPGrowthUnderLoad(t *testing.T) {
	for _, lay := range []counting4.Layout{counting4.Blocked512, counting4.Classic} {
		t.Run(lay.String(), func(t *testing.T) { runGrowth(t, lay, 1e-9) })
	}
}

func runGrowth(t *testing.T, layout counting4.Layout, errorRate float64) {
	requireFiles(t)
	const nprocs, keys = 4, 20_000 // 80,000 adds: filters 2k+4k+8k+16k+32k < 80k
	dir := t.TempDir()
	path := filepath.Join(dir, "grow.dbl")
	ctl := createForChildren(t, path, &Options{Capacity: 2_000, ErrorRate: errorRate, Layout: layout}, filepath.Join(dir, "ctl"))
	start := time.Now()
	var procs []*childproc.Proc
	for p := 0; p < nprocs; p++ {
		procs = append(procs, children.Start(t, fmt.Sprintf("grow-%d", p), "grow",
			childproc.KV("PATH", path), childproc.KV("CTL", ctl.Name()), childproc.KV("PROC", p), childproc.KV("NPROCS", nprocs),
			childproc.KV("KEYS", keys), childproc.KV("REPORT", filepath.Join(dir, fmt.Sprintf("report-%d.json", p)))))
	}
	childproc.WaitAll(t, ctl, procs, 5*time.Minute)
	elapsed := time.Since(start)

	reps := make([]growReport, nprocs)
	for p := range reps {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("report-%d.json", p)))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &reps[p]); err != nil {
			t.Fatal(err)
		}
	}
	r0 := reps[0]
	stale, ambiguous := 0, 0
	for p, r := range reps {
		stale += r.StaleAddsRaced
		ambiguous += r.Ambiguous
		if r.Missing != 0 {
			t.Errorf("process %d: %d added keys not found", p, r.Missing)
		}
		if r.RemoveErrs != 0 {
			t.Errorf("process %d: %d removes failed (first: %s); keys ambiguous by false positives: %d", p, r.RemoveErrs, r.FirstRemoveErr, r.Ambiguous)
		}
		if fmt.Sprint(r.AfterAdd) != fmt.Sprint(r0.AfterAdd) {
			t.Errorf("process %d sees after the adds\n%+v\nprocess 0 sees\n%+v", p, r.AfterAdd, r0.AfterAdd)
		}
		if fmt.Sprint(r.AfterRemove) != fmt.Sprint(r0.AfterRemove) {
			t.Errorf("process %d sees after the removes\n%+v\nprocess 0 sees\n%+v", p, r.AfterRemove, r0.AfterRemove)
		}
	}
	nf := len(r0.AfterAdd.Filters)
	if nf < 6 {
		t.Errorf("the chain grew %d times, want at least 5", nf-1)
	}
	var total uint64
	for _, fv := range r0.AfterAdd.Filters {
		total += fv.Count
	}
	if total != nprocs*keys {
		t.Errorf("item counts sum to %d after the adds, want %d", total, nprocs*keys)
	}
	for _, fv := range r0.AfterRemove.Filters {
		if fv.Count != 0 {
			t.Errorf("filter %d holds %d items after every key was removed", fv.Index, fv.Count)
		}
	}

	ff, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ff.Close()
	st := ff.Stats()
	last := st.Filters[len(st.Filters)-1]
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if end := last.Offset + last.Bytes; fi.Size() != end || st.FileSize != end || r0.AfterRemove.FileSize != end {
		t.Errorf("file size %d (stat), %d (Stats), %d (children); the last filter ends at %d", fi.Size(), st.FileSize, r0.AfterRemove.FileSize, end)
	}
	nonzero := 0
	for _, m := range ff.chain.Load().f {
		nz, mx, sum := 0, uint8(0), 0
		for i := range m.cf.Words() {
			if atomic.LoadUint64(&m.cf.Words()[i]) != 0 {
				nonzero++
				nz++
			}
		}
		for c := uint64(0); c < m.desc.Counters; c++ {
			v := m.cf.Get(c)
			mx = max(mx, v)
			sum += int(v)
		}
		if nz > 0 {
			t.Logf("filter %d: %d non-zero words, counter sum %d (= %.2f keys of k=%d), max counter %d", m.idx, nz, sum, float64(sum)/float64(m.desc.K), m.desc.K, mx)
		}
	}
	if nonzero != 0 {
		t.Errorf("%d counter words are not zero after every key was removed", nonzero)
	}
	var dirLines []string
	for _, fv := range r0.AfterAdd.Filters {
		dirLines = append(dirLines, fmt.Sprintf("#%d off=%d cap=%d counters=%d k=%d ids=[%d,%d] items=%d", fv.Index, fv.Offset, fv.Capacity, fv.Counters, fv.K, fv.FirstID, fv.LastID, fv.Count))
	}
	t.Logf("%d processes, %d adds + %d removes in %v; %d filters (%d growths); adds that started with a stale chain: %d; keys in two in-range filters: %d\n  %s",
		nprocs, nprocs*keys, nprocs*keys, elapsed.Round(time.Millisecond), nf, nf-1, stale, ambiguous, strings.Join(dirLines, "\n  "))
}
