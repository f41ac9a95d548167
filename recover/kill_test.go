package recover

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/childproc"
	"github.com/dablooms/dablooms/scaling"
)

// The kill test runs writer processes (this test binary again, running
// TestKillChild; see internal/childproc) on one file and SIGKILLs them at
// random moments. Each goroutine of a writer logs its operations to a shared
// mapping of a log file: the operation before it starts, and the count of
// completed ones after each returns. Stores to a MAP_SHARED mapping are in
// the page cache as soon as they are made, so the log survives the kill, and
// logging costs no system call (the kill lands inside operations, not inside
// log writes).

// killWriters are TestKillChild's processes; their environment variables
// start with DABLOOMS_KILL_.
var killWriters = childproc.Family{Test: "TestKillChild", Prefix: "DABLOOMS_KILL_"}

const (
	killGoroutines = 2
	killMaxOps     = 1 << 17
	killSeed       = 99
	killCapacity   = 100_000
)

// Log layout: word 0 is 1 once the writer has opened the file; goroutine g's
// area starts at word 1 + g*(1+killMaxOps): its completed count, then one
// word per operation, kind<<32 | key number (kind 1 add, 2 remove).
func killLogWords() int { return 1 + killGoroutines*(1+killMaxOps) }

func killKey(proc, g, n int) []byte { return []byte(fmt.Sprintf("p%d-g%d-%d", proc, g, n)) }

// TestKillChild is the writer process of TestKillWritersThenRepair.
func TestKillChild(t *testing.T) {
	killWriters.Child(t)
	proc := killWriters.EnvInt("PROC")
	lg, err := childproc.MapShm(killWriters.Env("LOG"), killLogWords(), false)
	if err != nil {
		t.Fatal(err)
	}
	f, err := scaling.Open(killWriters.Env("PATH"), booted(&scaling.OpenOptions{AllowUnclean: true}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	lg.Store(0, 1)
	deadline := time.Now().Add(20 * time.Second) // the parent kills us long before
	var wg sync.WaitGroup
	for g := range killGoroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			area := 1 + g*(1+killMaxOps)
			rng := rand.New(rand.NewSource(int64(proc*100 + g)))
			var present []int
			next := 0
			for i := 0; i < killMaxOps && time.Now().Before(deadline); i++ {
				if rng.Intn(1000) == 0 && g == 0 {
					f.Flush()
				}
				if len(present) > 0 && rng.Intn(10) < 4 {
					j := rng.Intn(len(present))
					n := present[j]
					lg.Store(area+1+i, 2<<32|uint64(n))
					if err := f.Remove(killKey(proc, g, n), uint64(n)); err != nil {
						panic(err)
					}
					present[j] = present[len(present)-1]
					present = present[:len(present)-1]
				} else {
					n := next
					next++
					lg.Store(area+1+i, 1<<32|uint64(n))
					if err := f.Add(killKey(proc, g, n), uint64(n)); err != nil {
						panic(err)
					}
					present = append(present, n)
				}
				lg.Store(area, uint64(i+1))
			}
		}()
	}
	wg.Wait()
	time.Sleep(time.Hour) // wait for the kill
}

type killOp struct {
	add     bool
	key     []byte
	pending bool
}

// readKillLog returns the operations each goroutine of a writer completed,
// and the one it had started when it was killed, if any.
func readKillLog(lg *childproc.Shm, proc int) (done []killOp, pending []killOp) {
	w := lg.Load
	for g := range killGoroutines {
		base := 1 + g*(1+killMaxOps)
		n := int(w(base))
		for i := 0; i <= n && i < killMaxOps; i++ {
			e := w(base + 1 + i)
			if e == 0 {
				break
			}
			op := killOp{add: e>>32 == 1, key: killKey(proc, g, int(uint32(e))), pending: i == n}
			if op.pending {
				pending = append(pending, op)
			} else {
				done = append(done, op)
			}
		}
	}
	return done, pending
}

var killTemplates = map[counting4.Layout][]byte{}

func killTemplate(t *testing.T, lay counting4.Layout) []byte {
	if b, ok := killTemplates[lay]; ok {
		return b
	}
	path := filepath.Join(t.TempDir(), "template.dbl")
	f, err := scaling.Create(path, booted(&scaling.Options{Capacity: killCapacity, ErrorRate: 0.01, Layout: lay, Seed: killSeed}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	killTemplates[lay] = b
	return b
}

// TestKillWritersThenRepair: two writer processes are SIGKILLed at random
// moments; then Repair must leave the file clean, with every counter equal to
// the replay of the completed operations (plus any subset of the operations
// cut short, each applied wholly or not at all), the item count equal to the
// replay's, and no false negative for any key whose Add returned and whose
// Remove did not start.
func TestKillWritersThenRepair(t *testing.T) {
	trials := 30
	if testing.Short() {
		trials = 5
	}
	trials = envInt("DABLOOMS_KILL_TRIALS", trials)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	states := map[State]int{}
	var pendingTotal, rolled, ambiguous, ops int
	start := time.Now()
	for trial := range trials {
		lay := counting4.Classic
		if trial%2 == 1 {
			lay = counting4.Blocked512
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "kill.dbl")
		if err := os.WriteFile(path, killTemplate(t, lay), 0o644); err != nil {
			t.Fatal(err)
		}
		var procs []*childproc.Proc
		var logs []*childproc.Shm
		for p := range 2 {
			lg, err := childproc.MapShm(filepath.Join(dir, fmt.Sprintf("log%d", p)), killLogWords(), true)
			if err != nil {
				t.Fatal(err)
			}
			logs = append(logs, lg)
			procs = append(procs, killWriters.Start(t, fmt.Sprintf("trial %d writer %d", trial, p), "writer",
				childproc.KV("PATH", path), childproc.KV("LOG", lg.Name()), childproc.KV("PROC", p)))
		}
		// Wait until both writers have opened the file.
		for p, lg := range logs {
			childproc.Await(t, procs[p], func() bool { return lg.Load(0) == 1 })
		}
		order := rng.Perm(2)
		time.Sleep(time.Duration(2+rng.Intn(25)) * time.Millisecond)
		procs[order[0]].Cmd.Process.Signal(syscall.SIGKILL)
		time.Sleep(time.Duration(rng.Intn(8000)) * time.Microsecond)
		procs[order[1]].Cmd.Process.Signal(syscall.SIGKILL)
		for _, p := range procs {
			<-p.Done
			if p.Out.Len() > 0 {
				t.Logf("trial %d: %s wrote:\n%s", trial, p.Name, p.Out)
			}
		}

		var done, pending []killOp
		for p, lg := range logs {
			d, pe := readKillLog(lg, p)
			done, pending = append(done, d...), append(pending, pe...)
			lg.Close()
		}
		ops += len(done)
		pendingTotal += len(pending)

		before := verifyT(t, path)
		states[before.State]++
		if before.State > Dirty || before.State == Dirty && len(before.NeedsRebuild) == 0 {
			dumpReport(t, before)
			t.Fatalf("trial %d: after kill -9 on this boot, verify says %s", trial, before.State)
		}
		rep, err := Repair(path, booted(&RepairOptions{}, testBoot))
		if err != nil {
			t.Fatalf("trial %d: repair: %v", trial, err)
		}
		after := verifyT(t, path)
		if len(before.NeedsRebuild) > 0 {
			// Several writers died inside a compare-and-swap each, and the
			// counter sum cannot tell which of them happened (see
			// hypsOf). Repair must leave the counters safe (no false
			// negative) and the filter for Rebuild; the application's data
			// then makes it exact.
			ambiguous++
			if after.State != Dirty || len(after.NeedsRebuild) != 1 {
				dumpReport(t, after)
				t.Fatalf("trial %d: an ambiguous repair left %s", trial, after.State)
			}
			checkNoFalseNegatives(t, trial, path, done, pending)
			if rep, err = Rebuild(path, killSource(done), booted(&RepairOptions{}, testBoot)); err != nil {
				t.Fatalf("trial %d: rebuild: %v", trial, err)
			}
			after = verifyT(t, path)
		}
		if after.State != Clean || rep.State != Clean || after.MemSeqnum != after.DiskSeqnum {
			dumpReport(t, before)
			dumpReport(t, after)
			t.Fatalf("trial %d: after repair: %s (mem %d, disk %d)", trial, after.State, after.MemSeqnum, after.DiskSeqnum)
		}
		for _, f := range before.Findings {
			if f.State == Interrupted && f.Field == "filter" {
				rolled++
			}
		}
		checkReplay(t, trial, path, done, pending)
	}
	t.Logf("%d trials in %v: %d operations completed, %d cut short by the kills; %d filters repaired exactly by roll-back, %d left for Rebuild (several writers died inside a compare-and-swap and the counter sum cannot tell which happened); verdicts before repair: %v",
		trials, time.Since(start).Round(time.Millisecond), ops, pendingTotal, rolled, ambiguous, states)
	if ambiguous > 0 {
		t.Logf("NEEDS: exact repair of concurrent doubts needs more evidence from the core (see the recover report); %d of %d trials needed Rebuild", ambiguous, trials)
	}
}

// presentKeys returns the keys present by the completed operations: added,
// and not removed by a completed Remove.
func presentKeys(done []killOp) map[string]bool {
	present := map[string]bool{}
	for _, op := range done {
		if op.add {
			present[string(op.key)] = true
		} else {
			delete(present, string(op.key))
		}
	}
	return present
}

// killSource yields the keys that are present by the log (a Remove cut
// short leaves its key in).
func killSource(done []killOp) Source {
	present := presentKeys(done)
	return func(lo, hi uint64, add func([]byte, uint64) error) error {
		for k := range present {
			var p, g, n int
			fmt.Sscanf(k, "p%d-g%d-%d", &p, &g, &n)
			if uint64(n) >= lo && uint64(n) <= hi {
				if err := add([]byte(k), uint64(n)); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// checkNoFalseNegatives opens the file as it is (unclean) and checks every
// key whose Add returned and whose Remove did not start.
func checkNoFalseNegatives(t *testing.T, trial int, path string, done, pending []killOp) {
	f, err := scaling.Open(path, booted(&scaling.OpenOptions{ReadOnly: true, AllowUnclean: true}, testBoot))
	if err != nil {
		t.Fatalf("trial %d: %v", trial, err)
	}
	defer f.Close()
	present := presentKeys(done)
	for _, op := range pending {
		delete(present, string(op.key))
	}
	for k := range present {
		if !f.Contains([]byte(k)) {
			t.Fatalf("trial %d: false negative for %q after an ambiguous repair", trial, k)
		}
	}
}

// checkReplay compares the file's counters with the replay of the log.
func checkReplay(t *testing.T, trial int, path string, done, pending []killOp) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := header.Pick(b[:2*header.MetaSize], int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Filters) != 1 {
		t.Fatalf("trial %d: %d filters; the test expects no growth", trial, len(m.Filters))
	}
	d := m.Filters[0]
	lay := counting4.Layout(d.LayoutID)
	pos := make([]uint64, d.K)
	positions := func(k []byte) []uint64 {
		lay.Positions(header.HashKey(m.Params.Seed, k)+counting4.Salt(0), d.Counters, d.K, pos)
		return pos
	}
	// Net count of each key over the completed operations.
	net := map[string]int{}
	for _, op := range done {
		if op.add {
			net[string(op.key)]++
		} else {
			net[string(op.key)]--
		}
	}
	want := make([]int, d.Counters)
	items := 0
	for k, n := range net {
		items += n
		for _, p := range positions([]byte(k)) {
			want[p] += n
		}
	}
	got := make([]int, d.Counters)
	var diff []uint64 // counters where the file differs from the replay of completed ops
	for c := range d.Counters {
		w := le.Uint64(b[d.Offset+int64(c>>4)*8:])
		got[c] = int(w >> ((c & 15) * 4) & 15)
		if got[c] != want[c] {
			diff = append(diff, c)
		}
		if got[c] == 15 {
			t.Fatalf("trial %d: a counter saturated; the replay check needs none", trial)
		}
	}
	fileItems := int(itemsInImage(b, &d, 0))
	// Some subset of the cut-short operations happened, each wholly.
	matched := false
	for mask := 0; mask < 1<<len(pending) && !matched; mask++ {
		delta := map[uint64]int{}
		it := items
		for j, op := range pending {
			if mask&(1<<j) == 0 {
				continue
			}
			s := 1
			if !op.add {
				s = -1
			}
			it += s
			for _, p := range positions(op.key) {
				delta[p] += s
			}
		}
		ok := it == fileItems
		for _, c := range diff {
			if got[c] != want[c]+delta[c] {
				ok = false
				break
			}
		}
		for c, dv := range delta {
			if got[c] != want[c]+dv {
				ok = false
			}
		}
		matched = ok
	}
	if !matched {
		t.Fatalf("trial %d: counters (%d differ from the completed operations) and items (file %d, replay %d) match no subset of the %d cut-short operations",
			trial, len(diff), fileItems, items, len(pending))
	}
	// No false negative.
	f, err := scaling.Open(path, booted(&scaling.OpenOptions{ReadOnly: true}, testBoot))
	if err != nil {
		t.Fatalf("trial %d: open after repair: %v", trial, err)
	}
	defer f.Close()
	cut := map[string]bool{}
	for _, op := range pending {
		cut[string(op.key)] = true
	}
	for k, n := range net {
		if n > 0 && !cut[k] && !f.Contains([]byte(k)) {
			t.Fatalf("trial %d: false negative for %q", trial, k)
		}
	}
}
