package recover_test

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dablooms/dablooms/internal/childproc"
	"github.com/dablooms/dablooms/recover"
	"github.com/dablooms/dablooms/scaling"
)

// Multi-writer exact removes across a kill -9 and Repair: the kill variant of
// scaling's TestMPWritersExactRemove (whose workloads this repeats: recover's
// tests cannot import scaling's). Writer processes add their own keys with
// their own increasing ids; one is SIGKILLed partway, after the chain has
// grown; the others finish. After Repair every key whose Add returned is
// found, and removing each with its id succeeds: no ErrAmbiguous, no
// ErrNotPresent.
//
// Each writer logs, in shared words, the number of its Adds that started
// (stored before the call) and that returned (after it). After the kill,
// keys below "returned" were added; the one key at "returned" when started
// is one more was cut short and may or may not be present, so it is neither
// looked up nor removed (a Remove of a key that is only a false positive
// would take counts from other keys).

var wkWriters = childproc.Family{Test: "TestWritersKillChild", Prefix: "DABLOOMS_WKILL_"}

const (
	wkProcs    = 3
	wkKeys     = 16_000 // per writer: the survivors alone fill 6 filters of 1k, 2k, ... 32k
	wkCapacity = 1_000
	wkLag      = 64 // blocks workload: no writer gets more than this many adds ahead

	// Shared words, after childproc's barrier words.
	wkKilled   = 255 // set by the parent once the victim is killed: nobody waits for it any more
	wkBase     = 256 // per writer p, wkStride words from wkBase+wkStride·p
	wkStride   = 8
	wkStarted  = 0 // Adds started
	wkReturned = 1 // Adds returned
)

type wkWorkload struct {
	name string
	ids  string // "interleaved" (i·procs+p) or "blocks" (p·1e9+i)
	skew int    // keys writer 0 adds before the others start
	lag  int    // if > 0: no survivor gets more than lag adds ahead of a live other (the victim never waits, so the kill lands in its Adds)
}

var wkWorkloads = []wkWorkload{
	{name: "disjoint-blocks", ids: "blocks", lag: wkLag},
	{name: "interleaved-skew", ids: "interleaved", skew: wkCapacity},
}

func wkWord(p, k int) int { return wkBase + wkStride*p + k }

// TestWritersKillChild is a writer process of TestWritersKillRepairRemove.
func TestWritersKillChild(t *testing.T) {
	role := wkWriters.Child(t)
	if err := wkWriter(); err != nil {
		fmt.Fprintf(os.Stderr, "writer %s (pid %d): %v\n", role, os.Getpid(), err)
		os.Exit(2)
	}
}

func wkWriter() error {
	ctl, err := childproc.MapShm(wkWriters.Env("CTL"), childproc.CtlWords, false)
	if err != nil {
		return err
	}
	p, nprocs, keys := wkWriters.EnvInt("PROC"), wkWriters.EnvInt("NPROCS"), wkWriters.EnvInt("KEYS")
	skew, lag, ids := wkWriters.EnvInt("SKEW"), wkWriters.EnvInt("LAG"), wkWriters.Env("IDS")
	f, err := scaling.Open(wkWriters.Env("PATH"), recover.Booted(&scaling.OpenOptions{}, recover.TestBoot))
	if err != nil {
		return err
	}
	// Keep within lag Adds of the others, unless the victim is dead (its
	// count no longer moves).
	returned := func(q int) int { return wkWord(q, wkReturned) }
	victimDead := func() bool { return ctl.Load(wkKilled) != 0 }
	add := func(i int) error {
		if err := childproc.KeepUp(ctl, returned, nprocs, i, lag, victimDead); err != nil {
			return err
		}
		ctl.Store(wkWord(p, wkStarted), uint64(i+1))
		if err := f.Add(childproc.WriterKey(p, i), childproc.WriterID(ids, p, i, nprocs)); err != nil {
			return fmt.Errorf("add %d: %w", i, err)
		}
		ctl.Store(wkWord(p, wkReturned), uint64(i+1))
		return nil
	}
	// Writer 0 adds its head start first.
	if err := childproc.SkewedStart(ctl, p, nprocs, skew, keys, add); err != nil {
		return err
	}
	if wkWriters.Env("VICTIM") == "1" {
		time.Sleep(time.Hour) // finished before the kill: wait for it
	}
	return f.Close()
}

// TestWritersKillRepairRemove: 3 writers (the workloads of
// TestMPWritersExactRemove), one SIGKILLed after it has added at least
// 2,000 keys (the chain has grown at least twice by then); the others finish.
// After Repair the file is trustworthy, has at least 6 filters, misses no
// key whose Add returned, and removes every such key with its id, newest
// first: no ErrAmbiguous, no ErrNotPresent, no other error. Afterwards at
// most the one cut-short key is left.
func TestWritersKillRepairRemove(t *testing.T) {
	trials := 8
	if testing.Short() {
		trials = 3
	}
	trials = recover.EnvInt("DABLOOMS_WKILL_TRIALS", trials)
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	start := time.Now()
	var cut, ambiguous, notPresent, other, missing, removes int
	states := map[recover.State]int{}
	for trial := 0; trial < trials; trial++ {
		w := wkWorkloads[trial%len(wkWorkloads)]
		victim := trial % wkProcs
		killAt := 2_000 + rng.Intn(6_000)
		r := wkTrial(t, trial, w, victim, killAt)
		states[r.before]++
		if r.cut {
			cut++
		}
		ambiguous += r.ambiguous
		notPresent += r.notPresent
		other += r.other
		missing += r.missing
		removes += r.removes
		t.Logf("trial %d (%s, writer %d killed after %d adds, target %d, Add cut short: %v): verify before repair %s; %d filters; %d removes: %d ErrAmbiguous, %d ErrNotPresent, %d other; %d keys missed; %d items left",
			trial, w.name, victim, r.victimAdds, killAt, r.cut, r.before, r.filters, r.removes, r.ambiguous, r.notPresent, r.other, r.missing, r.left)
		if r.filters < 6 {
			t.Errorf("trial %d: %d filters, want at least 6 (5 growths)", trial, r.filters)
		}
		if r.missing != 0 {
			t.Errorf("trial %d: %d keys whose Add returned are not found after Repair (first: %s)", trial, r.missing, r.firstMissing)
		}
		if r.ambiguous+r.notPresent+r.other != 0 {
			t.Errorf("trial %d: %d removes failed: %d ErrAmbiguous, %d ErrNotPresent, %d other; first: %s",
				trial, r.ambiguous+r.notPresent+r.other, r.ambiguous, r.notPresent, r.other, r.firstErr)
		}
		maxLeft := uint64(0)
		if r.cut {
			maxLeft = 1
		}
		if r.left > maxLeft || r.itemsBefore != uint64(r.removes)+r.left {
			t.Errorf("trial %d: %d items before the removes, %d after %d removes of known keys (cut-short key: %v)", trial, r.itemsBefore, r.left, r.removes, r.cut)
		}
	}
	t.Logf("%d trials in %v (seed %d): %d Adds cut short by the kill; verify before repair: %v; %d removes: %d ErrAmbiguous, %d ErrNotPresent, %d other; %d keys missed",
		trials, time.Since(start).Round(time.Millisecond), seed, cut, states, removes, ambiguous, notPresent, other, missing)
}

type wkResult struct {
	victimAdds                   int  // Adds of the victim that returned
	cut                          bool // one more had started
	before                       recover.State
	filters                      int
	itemsBefore, left            uint64
	removes, missing             int
	ambiguous, notPresent, other int
	firstErr, firstMissing       string
}

// wkTrial runs one trial: the writers, the kill of writer victim once it has
// added killAt keys, Repair, then the lookups and removes in this process.
func wkTrial(t *testing.T, trial int, w wkWorkload, victim, killAt int) wkResult {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "writers.dbl")
	f, err := scaling.Create(path, recover.Booted(&scaling.Options{Capacity: wkCapacity, GrowthFactor: 2, ErrorRate: 0.01}, recover.TestBoot))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	ctl, err := childproc.MapShm(filepath.Join(dir, "ctl"), childproc.CtlWords, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	var survivors []*childproc.Proc
	var vp *childproc.Proc
	for p := 0; p < wkProcs; p++ {
		isVictim := 0
		if p == victim {
			isVictim = 1
		}
		proc := wkWriters.Start(t, fmt.Sprintf("trial %d writer %d", trial, p), "writer",
			childproc.KV("PATH", path), childproc.KV("CTL", ctl.Name()), childproc.KV("PROC", p), childproc.KV("NPROCS", wkProcs),
			childproc.KV("KEYS", wkKeys), childproc.KV("SKEW", w.skew), childproc.KV("LAG", w.lag*(1-isVictim)), childproc.KV("IDS", w.ids),
			childproc.KV("VICTIM", isVictim))
		if p == victim {
			vp = proc
		} else {
			survivors = append(survivors, proc)
		}
	}
	childproc.Await(t, vp, func() bool { return ctl.Load(wkWord(victim, wkReturned)) >= uint64(killAt) })
	vp.Cmd.Process.Signal(syscall.SIGKILL)
	<-vp.Done
	ctl.Store(wkKilled, 1)
	var ee *exec.ExitError
	if !errors.As(vp.Err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("trial %d: %s was not killed by SIGKILL (%v):\n%s", trial, vp.Name, vp.Err, vp.Out)
	}
	childproc.WaitAll(t, ctl, survivors, 2*time.Minute)

	r := wkResult{victimAdds: int(ctl.Load(wkWord(victim, wkReturned)))}
	r.cut = ctl.Load(wkWord(victim, wkStarted)) > uint64(r.victimAdds)
	before := recover.VerifyT(t, path)
	r.before = before.State
	rep, err := recover.Repair(path, recover.Booted(&recover.RepairOptions{}, recover.TestBoot))
	if err != nil {
		recover.DumpReport(t, before)
		t.Fatalf("trial %d: repair: %v", trial, err)
	}
	after := recover.VerifyT(t, path)
	if after.State > recover.Unflushed || len(after.NeedsRebuild) > 0 || rep.State > recover.Unflushed {
		recover.DumpReport(t, before)
		recover.DumpReport(t, after)
		t.Fatalf("trial %d: after Repair the file is %s (needs rebuild: %v)", trial, after.State, after.NeedsRebuild)
	}

	// The keys whose Add returned, newest first.
	type entry struct {
		key []byte
		id  uint64
	}
	var known []entry
	for i := wkKeys - 1; i >= 0; i-- {
		for p := wkProcs - 1; p >= 0; p-- {
			if p != victim || i < r.victimAdds {
				known = append(known, entry{childproc.WriterKey(p, i), childproc.WriterID(w.ids, p, i, wkProcs)})
			}
		}
	}
	sf, err := scaling.Open(path, recover.Booted(&scaling.OpenOptions{}, recover.TestBoot))
	if err != nil {
		t.Fatalf("trial %d: open after Repair: %v", trial, err)
	}
	defer sf.Close()
	st := sf.Stats()
	r.filters, r.itemsBefore = len(st.Filters), st.Count
	for _, e := range known {
		if !sf.Contains(e.key) {
			if r.missing == 0 {
				r.firstMissing = fmt.Sprintf("%q id %d", e.key, e.id)
			}
			r.missing++
		}
	}
	for _, e := range known {
		err := sf.Remove(e.key, e.id)
		r.removes++
		switch {
		case err == nil:
		case errors.Is(err, scaling.ErrAmbiguous):
			r.ambiguous++
		case errors.Is(err, scaling.ErrNotPresent):
			r.notPresent++
		default:
			r.other++
		}
		if err != nil && r.firstErr == "" {
			r.firstErr = fmt.Sprintf("%q id %d: %v", e.key, e.id, err)
		}
	}
	r.left = sf.Stats().Count
	return r
}
