package scaling

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dablooms/dablooms/internal/childproc"
	"github.com/dablooms/dablooms/internal/testknobs"
)

// Multi-writer exact removes.
//
// Several writer processes each add their own keys with their own increasing
// ids, at their own pace, then remove them with the same ids. A writer that
// lags behind the others adds, with ids inside an older filter's range, to
// the newest filter; the old routing then lets id ranges overlap, and a
// Remove whose key is also a false positive of another in-range filter is
// refused with ErrAmbiguous. The property under test: every such Remove
// succeeds (no ErrAmbiguous, no ErrNotPresent), no key is ever missed, and
// the chain (at least 6 filters) ends empty.
//
// The workloads (writersWorkloads):
//   - interleaved-skew: 3 processes, process p adds key i with id i·3+p;
//     process 0 adds a whole first filter's worth (Capacity keys) before the
//     others start, so they start a whole filter behind, then all run at
//     their own pace;
//   - disjoint-blocks: 4 processes starting together, process p uses ids
//     p·1e9+i; no process gets more than writersLag adds (and removes) ahead
//     of the slowest, so every filter holds keys of every block and its id
//     range spans them all, however the scheduler runs the processes (run
//     one after the other, they would leave disjoint ranges, and nothing
//     to find).
//
// Each process removes its keys newest first: the older filters are then
// still full when the keys of the newer ones go, the harshest order for
// false positives of older filters.
//
// TestMPWritersLegacyControl is the negative control: the children switch to
// the old routing (Knobs.LegacyRouting), and the disjoint-blocks workload must
// then show ambiguous removes, which proves the workload reaches the defect.

const writersCapacity = 1_000

type writersWorkload struct {
	name  string
	procs int
	keys  int    // per process
	skew  int    // keys process 0 adds before the others start
	lag   int    // if > 0: no process gets more than lag operations ahead of another
	ids   string // "interleaved" (i·procs+p) or "blocks" (p·1e9+i)
}

// 36,000 adds each: filters of 1k+2k+4k+8k+16k (plus slack) hold under
// 32,000, so the chain has at least 6 filters.
var writersWorkloads = []writersWorkload{
	{name: "interleaved-skew", procs: 3, keys: 12_000, skew: writersCapacity, ids: "interleaved"},
	{name: "disjoint-blocks", procs: 4, keys: 9_000, ids: "blocks", lag: writersLag},
}

// writersLag bounds how far the blocks writers drift apart: well under the
// first filter's capacity.
const writersLag = 64

func writersOptions() *Options {
	return &Options{Capacity: writersCapacity, GrowthFactor: 2, ErrorRate: 0.01}
}

// Shared words of the "writers" children (after the barrier words of
// childproc): per process p, wrStride words from wrBase+wrStride·p.
const (
	wrBase       = 256
	wrStride     = 16
	wrAdded      = 0 // adds that returned
	wrMissing    = 1 // keys (of every process) Contains did not find after the adds
	wrAmbiguous  = 2 // removes refused with ErrAmbiguous
	wrNotPresent = 3 // removes refused with ErrNotPresent
	wrOther      = 4 // removes failing otherwise
	wrRemoved    = 5 // removes that succeeded
	wrFirstErr   = 6 // 1 + key number of the first failed remove (0: none)
	wrFilters    = 7 // process 0: len(Stats().Filters) after the adds
	wrItems      = 8 // process 0: Stats().Count after the adds
	wrRemoves    = 9 // removes that returned, successful or not
)

// childWriters is one writer of runWriters.
func childWriters() error {
	ctl, f, err := childStartWith("CTL", &testknobs.Knobs{LegacyRouting: children.Env("LEGACY") == "1"})
	if err != nil {
		return err
	}
	defer f.Close()
	p, nprocs, keys, skew, lag := children.EnvInt("PROC"), children.EnvInt("NPROCS"), children.EnvInt("KEYS"), children.EnvInt("SKEW"), children.EnvInt("LAG")
	ids := children.Env("IDS")
	w := func(k int) int { return wrBase + wrStride*p + k }
	add := func(i int) error {
		if err := childproc.KeepUp(ctl, func(q int) int { return wrBase + wrStride*q + wrAdded }, nprocs, i, lag, nil); err != nil {
			return err
		}
		if err := f.Add(childproc.WriterKey(p, i), childproc.WriterID(ids, p, i, nprocs)); err != nil {
			return fmt.Errorf("add %d: %w", i, err)
		}
		ctl.Store(w(wrAdded), uint64(i+1))
		return nil
	}
	// Process 0 adds its head start first.
	if err := childproc.SkewedStart(ctl, p, nprocs, skew, keys, add); err != nil {
		return err
	}
	if err := childproc.Barrier(ctl, 2, nprocs); err != nil {
		return err
	}
	// Every key of every process is found.
	missing := 0
	for q := 0; q < nprocs; q++ {
		for i := 0; i < keys; i++ {
			if !f.Contains(childproc.WriterKey(q, i)) {
				missing++
			}
		}
	}
	ctl.Store(w(wrMissing), uint64(missing))
	if p == 0 {
		st := f.Stats()
		ctl.Store(w(wrFilters), uint64(len(st.Filters)))
		ctl.Store(w(wrItems), st.Count)
	}
	if err := childproc.Barrier(ctl, 3, nprocs); err != nil {
		return err
	}
	// Remove this process's keys, newest first.
	for i := keys - 1; i >= 0; i-- {
		if err := childproc.KeepUp(ctl, func(q int) int { return wrBase + wrStride*q + wrRemoves }, nprocs, keys-1-i, lag, nil); err != nil {
			return err
		}
		err := f.Remove(childproc.WriterKey(p, i), childproc.WriterID(ids, p, i, nprocs))
		switch {
		case err == nil:
			ctl.Add(w(wrRemoved), 1)
		case errors.Is(err, ErrAmbiguous):
			ctl.Add(w(wrAmbiguous), 1)
		case errors.Is(err, ErrNotPresent):
			ctl.Add(w(wrNotPresent), 1)
		default:
			ctl.Add(w(wrOther), 1)
		}
		if err != nil && ctl.Load(w(wrFirstErr)) == 0 {
			ctl.Store(w(wrFirstErr), uint64(i+1))
		}
		ctl.Store(w(wrRemoves), uint64(keys-i))
	}
	return f.Close()
}

type writersResult struct {
	ambiguous, notPresent, other, removed, missing uint64
	firstErr                                       string // the first failed remove of each process that had one
	filters                                        int    // after the adds
	itemsAfterAdd                                  uint64
	itemsAfterRemove                               []uint64 // per filter
	chain                                          string   // id ranges and items per filter, after the removes
	elapsed                                        time.Duration
}

func (r writersResult) failedRemoves() uint64 { return r.ambiguous + r.notPresent + r.other }

func (r writersResult) String() string {
	return fmt.Sprintf("%d filters, %d items after the adds; removes: %d ok, %d ErrAmbiguous, %d ErrNotPresent, %d other; %d keys missed; %v",
		r.filters, r.itemsAfterAdd, r.removed, r.ambiguous, r.notPresent, r.other, r.missing, r.elapsed.Round(time.Millisecond))
}

// runWriters runs workload w in w.procs writer processes (under the old
// routing if legacy) and gathers their counts and the file's final state.
func runWriters(t *testing.T, w writersWorkload, legacy bool) writersResult {
	t.Helper()
	requireFiles(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "writers.dbl")
	ctl := createForChildren(t, path, writersOptions(), filepath.Join(dir, "ctl"))
	lg := 0
	if legacy {
		lg = 1
	}
	start := time.Now()
	var procs []*childproc.Proc
	for p := 0; p < w.procs; p++ {
		procs = append(procs, children.Start(t, fmt.Sprintf("%s writer %d", w.name, p), "writers",
			childproc.KV("PATH", path), childproc.KV("CTL", ctl.Name()), childproc.KV("PROC", p), childproc.KV("NPROCS", w.procs),
			childproc.KV("KEYS", w.keys), childproc.KV("SKEW", w.skew), childproc.KV("LAG", w.lag), childproc.KV("IDS", w.ids), childproc.KV("LEGACY", lg)))
	}
	childproc.WaitAll(t, ctl, procs, 2*time.Minute)
	r := writersResult{elapsed: time.Since(start)}
	for p := 0; p < w.procs; p++ {
		word := func(k int) uint64 { return ctl.Load(wrBase + wrStride*p + k) }
		if n := word(wrAdded); n != uint64(w.keys) {
			t.Fatalf("writer %d: %d adds returned, want %d", p, n, w.keys)
		}
		r.ambiguous += word(wrAmbiguous)
		r.notPresent += word(wrNotPresent)
		r.other += word(wrOther)
		r.removed += word(wrRemoved)
		r.missing += word(wrMissing)
		if i := word(wrFirstErr); i != 0 {
			r.firstErr += fmt.Sprintf(" key %q id %d;", childproc.WriterKey(p, int(i-1)), childproc.WriterID(w.ids, p, int(i-1), w.procs))
		}
	}
	r.filters = int(ctl.Load(wrBase + wrFilters))
	r.itemsAfterAdd = ctl.Load(wrBase + wrItems)
	f, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	for _, fs := range f.Stats().Filters {
		r.itemsAfterRemove = append(r.itemsAfterRemove, fs.Count)
		lines = append(lines, fmt.Sprintf("#%d cap=%d ids=[%d,%d] items=%d", fs.Index, fs.Capacity, fs.FirstID, fs.LastID, fs.Count))
	}
	r.chain = strings.Join(lines, "\n  ")
	return r
}

// checkWritersCommon checks what holds under either routing: the chain
// grew at least 5 times, every add counted, no key missed, and removes
// failed (if at all) only by refusing, each leaving exactly its one item.
func checkWritersCommon(t *testing.T, w writersWorkload, r writersResult) {
	t.Helper()
	if r.filters < 6 {
		t.Errorf("%d filters after the adds, want at least 6 (5 growths)", r.filters)
	}
	if want := uint64(w.procs * w.keys); r.itemsAfterAdd != want {
		t.Errorf("%d items after the adds, want %d", r.itemsAfterAdd, want)
	}
	if r.missing != 0 {
		t.Errorf("%d false negatives after the adds", r.missing)
	}
	if r.removed+r.failedRemoves() != uint64(w.procs*w.keys) {
		t.Errorf("%d removes counted, want %d", r.removed+r.failedRemoves(), w.procs*w.keys)
	}
	var left uint64
	for _, n := range r.itemsAfterRemove {
		left += n
	}
	if left != r.failedRemoves() {
		t.Errorf("%d items left after the removes, but %d removes failed", left, r.failedRemoves())
	}
}

// TestMPWritersExactRemove: with several writer processes adding their own
// keys with their own increasing ids, every Remove with the id of its Add
// succeeds and the chain ends empty.
func TestMPWritersExactRemove(t *testing.T) {
	for _, w := range writersWorkloads {
		t.Run(w.name, func(t *testing.T) {
			r := runWriters(t, w, false)
			t.Logf("%s\n  %s", r, r.chain)
			checkWritersCommon(t, w, r)
			if r.failedRemoves() != 0 {
				t.Errorf("%d removes failed: %d ErrAmbiguous, %d ErrNotPresent, %d other; first failures:%s",
					r.failedRemoves(), r.ambiguous, r.notPresent, r.other, r.firstErr)
			}
			for i, n := range r.itemsAfterRemove {
				if n != 0 {
					t.Errorf("filter %d holds %d items after every key was removed", i, n)
				}
			}
		})
	}
}

// TestMPWritersLegacyControl is the negative control of
// TestMPWritersExactRemove: under the old routing the disjoint-blocks
// workload must meet ambiguous removes (about a hundred expected per run),
// or the workload does not reach the defect the test is about. The
// interleaved workload's count is only reported.
func TestMPWritersLegacyControl(t *testing.T) {
	for _, w := range writersWorkloads {
		t.Run(w.name, func(t *testing.T) {
			r := runWriters(t, w, true)
			t.Logf("old routing: %s\n  %s", r, r.chain)
			checkWritersCommon(t, w, r)
			if r.notPresent != 0 || r.other != 0 {
				t.Errorf("old routing: %d ErrNotPresent, %d other errors; only ErrAmbiguous is expected (first failures:%s)", r.notPresent, r.other, r.firstErr)
			}
			if w.ids == "blocks" && r.ambiguous == 0 {
				t.Errorf("old routing: no ErrAmbiguous in %d removes: the workload does not reach the defect", r.removed)
			}
		})
	}
}
