package recover

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/childproc"
	"github.com/dablooms/dablooms/scaling"
)

// Retired filters and the ring directory (docs/FORMAT.md, version 1.2).

var ringOpts = scaling.Options{Capacity: 32, GrowthFactor: 1, ErrorRate: 0.01, Layout: counting4.Blocked512, Seed: 7, Reserve: 1 << 30}

// ringFile creates a store whose chain is a ring: keys 1..n, key i with id
// i, go to filters of 32 items, and every step ids the filters wholly below
// id-window are retired, so directory entries are reused out of order. It
// returns the path (flushed and closed).
func ringFile(t testing.TB, n, window, step int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ring.dbl")
	o := ringOpts
	f, err := scaling.Create(path, booted(&o, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if err := f.Add(key(i), uint64(i)); err != nil {
			t.Fatal(err)
		}
		if i%step == 0 && i > window {
			if _, err := f.RetireBefore(uint64(i - window)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// readMetaT decodes the metadata copy in use of the file at path.
func readMetaT(t testing.TB, path string) *header.Meta {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := header.Pick(b, int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return p.Meta
}

// checkWindow opens the store at path and reports (as test errors) a key
// with id in [lo, hi] that it does not hold; it returns the store's stats.
func checkWindow(t testing.TB, path string, lo, hi uint64, what string) scaling.Stats {
	t.Helper()
	f, err := scaling.Open(path, booted(&scaling.OpenOptions{ReadOnly: true}, testBoot))
	if err != nil {
		t.Fatalf("%s: open: %v", what, err)
	}
	defer f.Close()
	missing := 0
	for i := lo; i <= hi; i++ {
		if !f.Contains(key(int(i))) {
			if missing++; missing <= 3 {
				t.Errorf("%s: key %d (inside the window [%d, %d]) is missing", what, i, lo, hi)
			}
		}
	}
	return f.Stats()
}

// missingIn counts the keys with ids in [lo, hi] the store at path lacks.
func missingIn(t testing.TB, path string, lo, hi uint64) int {
	t.Helper()
	f, err := scaling.Open(path, booted(&scaling.OpenOptions{ReadOnly: true, AllowUnclean: true}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for i := lo; i <= hi; i++ {
		if !f.Contains(key(int(i))) {
			n++
		}
	}
	return n
}

// TestRingFile: Verify, Repair, Rebuild and Backup of a ring file whose
// chain uses directory entries out of order, after more than 64 filters
// were retired.
func TestRingFile(t *testing.T) {
	const n = 3000
	base := ringFile(t, n, 150, 40)
	m := readMetaT(t, base)
	inOrder := true
	for j, d := range m.Filters {
		inOrder = inOrder && d.Slot == j
	}
	if m.Flags&header.FlagRing == 0 || m.Retired <= header.MaxFilters || inOrder {
		t.Fatalf("fixture: flags %#x, %d retired, entries in order %v: not the ring file the test needs", m.Flags, m.Retired, inOrder)
	}
	lo := checkWindow(t, base, 1, 0, "fixture").Filters[0].FirstID
	copyFile := func(t *testing.T) string {
		p := filepath.Join(t.TempDir(), "ring.dbl")
		if err := os.WriteFile(p, mustReadFile(t, base), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	t.Run("verify", func(t *testing.T) {
		r := verifyT(t, base)
		if r.State != Clean || len(r.NeedsRebuild) != 0 || len(r.Filters) != len(m.Filters) {
			dumpReport(t, r)
			t.Fatalf("verify of a clean ring file: %s, rebuild %v, %d filters (directory %d)", r.State, r.NeedsRebuild, len(r.Filters), len(m.Filters))
		}
		for j, fr := range r.Filters {
			if fr.Index != m.Filters[j].Slot || fr.Items == 0 {
				t.Errorf("filter %d of the report: entry %d with %d items; the directory says entry %d", j, fr.Index, fr.Items, m.Filters[j].Slot)
			}
		}
	})

	t.Run("repair clean file leaves it", func(t *testing.T) {
		p := copyFile(t)
		before := sum256(t, p)
		rep, err := Repair(p, booted(&RepairOptions{}, testBoot))
		if err != nil || rep.State != Clean || rep.Backup != "" || sum256(t, p) != before {
			t.Fatalf("repair of a clean ring file: %v, %v, backup %q, changed %v", err, rep.State, rep.Backup, sum256(t, p) != before)
		}
	})

	t.Run("repair rewrites", func(t *testing.T) {
		// A pending-adds hint on the newest filter's line (by its entry)
		// makes Repair rewrite the file; the copy leaves out the space of
		// the retired filters and must verify clean, holding the window.
		p := copyFile(t)
		newest := m.Filters[len(m.Filters)-1].Slot
		off := header.FilterLineOffset(newest) + header.FilterPendingOffset
		putWord(t, p, off, 5)
		if r := verifyT(t, p); r.State != Clean || !hasFinding(r, "pending", newest) {
			dumpReport(t, r)
			t.Fatalf("the hint on entry %d is not reported", newest)
		}
		rep, err := Repair(p, booted(&RepairOptions{}, testBoot))
		if err != nil {
			t.Fatal(err)
		}
		after := verifyT(t, p)
		if rep.State != Clean || after.State != Clean || wordAt(t, p, off) != 0 || len(after.Findings) != 0 {
			dumpReport(t, after)
			t.Fatalf("after repair: %s, hint %d", after.State, wordAt(t, p, off))
		}
		checkWindow(t, p, lo, n, "repaired")
	})

	t.Run("rebuild dirty filters", func(t *testing.T) {
		// Keys 3001..3200 change the newest filters and retire more on
		// boot A, which then "crashes" (no flush): on boot B they are
		// dirty, and their counters are lost (zeroed). Rebuild re-adds
		// them by their entries' salts.
		p := copyFile(t)
		const more = 3200
		f, err := scaling.Open(p, booted(&scaling.OpenOptions{}, testBoot))
		if err != nil {
			t.Fatal(err)
		}
		for i := n + 1; i <= more; i++ {
			if err := f.Add(key(i), uint64(i)); err != nil {
				t.Fatal(err)
			}
			if i%40 == 0 {
				if _, err := f.RetireBefore(uint64(i - 150)); err != nil {
					t.Fatal(err)
				}
			}
		}
		f.Close()
		vo := booted(&VerifyOptions{}, "boot-other")
		before, err := VerifyWithOptions(p, vo)
		if err != nil {
			t.Fatal(err)
		}
		if before.State != Dirty || len(before.NeedsRebuild) == 0 {
			dumpReport(t, before)
			t.Fatalf("after the crash: %s, rebuild %v", before.State, before.NeedsRebuild)
		}
		for _, e := range before.NeedsRebuild {
			for _, fr := range before.Filters {
				if fr.Index == e {
					b := mustReadFile(t, p)
					clear(b[fr.Offset : fr.Offset+int64(fr.Counters/2)])
					if err := os.WriteFile(p, b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		newLo := checkWindowUnclean(t, p)
		// Negative control: without the source the lost keys stay lost.
		ctl := filepath.Join(t.TempDir(), "ctl.dbl")
		if _, err := Rebuild(p, func(uint64, uint64, func([]byte, uint64) error) error { return nil }, booted(&RepairOptions{Output: ctl}, "boot-other")); err != nil {
			t.Fatal(err)
		}
		if missingIn(t, ctl, newLo, more) == 0 {
			t.Fatalf("negative control: an empty source lost no key, so the test cannot tell a rebuild from none")
		}
		rep, err := Rebuild(p, keysSource(more), booted(&RepairOptions{}, "boot-other"))
		if err != nil {
			t.Fatal(err)
		}
		after := verifyT(t, p)
		if rep.State != Clean || after.State != Clean {
			dumpReport(t, rep)
			t.Fatalf("after rebuild: %s", after.State)
		}
		checkWindow(t, p, newLo, more, "rebuilt")
	})

	t.Run("backup", func(t *testing.T) {
		p := copyFile(t)
		dst := filepath.Join(t.TempDir(), "copy.dbl")
		if _, err := Backup(context.Background(), p, dst, booted(&BackupOptions{}, testBoot)); err != nil {
			t.Fatal(err)
		}
		if r := verifyT(t, dst); r.State != Clean {
			dumpReport(t, r)
			t.Fatalf("backup: %s", r.State)
		}
		st := checkWindow(t, dst, lo, n, "backup")
		if st.Retired != m.Retired || len(st.Filters) != len(m.Filters) {
			t.Fatalf("backup: %d retired, %d filters; the original %d, %d", st.Retired, len(st.Filters), m.Retired, len(m.Filters))
		}
	})
}

// checkWindowUnclean returns the first id of the chain of the (unclean)
// store at path.
func checkWindowUnclean(t testing.TB, path string) uint64 {
	t.Helper()
	f, err := scaling.Open(path, booted(&scaling.OpenOptions{ReadOnly: true, AllowUnclean: true}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return f.Stats().Filters[0].FirstID
}

// worstBut is the worst state of r's findings but those on field ("metadata":
// every finding located in a metadata copy, whatever its field).
func worstBut(r *Report, field string) State {
	w := Clean
	for _, f := range r.Findings {
		if f.Field == field || field == "metadata" && f.Offset >= 0 && f.Offset < header.HotOffset {
			continue // a metadata copy (torn or older): its finding may be named by its field
		}
		w = max(w, f.State)
	}
	return w
}

func hasFinding(r *Report, field string, filter int) bool {
	for _, f := range r.Findings {
		if f.Field == field && f.Filter == filter {
			return true
		}
	}
	return false
}

// unflushedAdd adds key n+1 (id n+1, the newest filter's) to the closed
// file at path and closes it without a flush: the file is dirty on this
// boot, as a RetireBefore leaves it once it has marked it dirty (before it
// raises the hot retired word).
func unflushedAdd(t testing.TB, path string, n int) {
	t.Helper()
	f, err := scaling.Open(path, booted(&scaling.OpenOptions{}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Add(key(n+1), uint64(n+1)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRetireCutShort raises the hot retired word by hand in a file marked
// dirty, as a process that died inside RetireBefore leaves it: Verify
// reports the retirement, Repair finishes it (and clears a dead writer's
// record on a retired filter), and the file then opens without the
// retired filters and with every key of the others. (In a file marked
// clean the same word is damage: TestRetiredWordWhenClean.)
func TestRetireCutShort(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ring   bool // the file already has retired filters
		drop   int  // filters the hot word retires beyond the directory
		record bool // a dead writer's record names the first retired entry
		bad    bool // the word would retire the newest filter: damage
		want   State
	}{
		{name: "first retirement", drop: 2, want: Unflushed},
		{name: "ring", ring: true, drop: 2, want: Unflushed},
		{name: "ring dead record", ring: true, drop: 1, record: true, want: Interrupted},
		{name: "first retirement dead record", drop: 3, record: true, want: Interrupted},
		{name: "beyond the newest", ring: true, drop: 99, bad: true, want: Damaged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var path string
			n := 600
			if tc.ring {
				path = ringFile(t, n, 150, 40)
			} else {
				path = newFileOpts(t, n)
			}
			unflushedAdd(t, path, n)
			m := readMetaT(t, path)
			if len(m.Filters) < 4 {
				t.Fatalf("fixture: %d filters", len(m.Filters))
			}
			hot := m.Retired + uint64(tc.drop)
			putWord(t, path, header.RetiredOffset, hot)
			if tc.record {
				// Slot 5, record 0: a dead writer's Add on the first
				// entry retired, that changed two counters.
				e := m.Filters[0].Slot
				off := header.RecordOffset(5, 0)
				putWord(t, path, off+header.RecOpOffset, uint64(header.OpAdd)|uint64(e)<<8|3<<16)
				putWord(t, path, off+header.RecHashOffset, 0x1234)
				putWord(t, path, off+header.RecChangedOffset, 3)
				putWord(t, path, header.SlotOffset(5)+header.SlotOwnerOffset, 77)
			}
			g, openErr := scaling.Open(path, booted(&scaling.OpenOptions{ReadOnly: true, AllowUnclean: true}, testBoot))
			if openErr == nil {
				g.Close()
			}
			if !tc.bad && openErr != nil {
				t.Fatalf("a file with a retirement cut short does not open read-only: %v", openErr)
			}
			before := verifyT(t, path)
			if before.State != tc.want || !hasFinding(before, "retired", -1) {
				dumpReport(t, before)
				t.Fatalf("verify: %s, want %s with a finding on the retired word", before.State, tc.want)
			}
			if tc.record && !hasFinding(before, "record", m.Filters[0].Slot) {
				dumpReport(t, before)
				t.Fatalf("verify: the dead record on retired entry %d is not reported", m.Filters[0].Slot)
			}
			rep, err := Repair(path, booted(&RepairOptions{}, testBoot))
			if err != nil {
				t.Fatal(err)
			}
			after := verifyT(t, path)
			if rep.State != Clean || after.State != Clean || len(after.Findings) > 1 {
				dumpReport(t, rep)
				t.Fatalf("after repair: %s", after.State)
			}
			keep := tc.drop
			if tc.bad {
				keep = 0
			}
			am := readMetaT(t, path)
			if am.Retired != m.Retired+uint64(keep) || len(am.Filters) != len(m.Filters)-keep || am.Flags&header.FlagRing == 0 && keep > 0 {
				t.Fatalf("after repair the directory has %d retired, %d filters, flags %#x; want %d, %d, ring", am.Retired, len(am.Filters), am.Flags, m.Retired+uint64(keep), len(m.Filters)-keep)
			}
			if w := wordAt(t, path, header.RecordOffset(5, 0)+header.RecOpOffset); header.OpWord(w).InFlight() {
				t.Fatalf("the dead record is still in flight: %#x", w)
			}
			for _, d := range m.Filters[:keep] {
				b := mustReadFile(t, path)
				line := header.FilterLineOffset(d.Slot)
				if firstNonZero(b[line:line+header.LineSize]) >= 0 || (d.Offset < int64(len(b)) && firstNonZero(b[d.Offset:min(d.Offset+d.Length, int64(len(b)))]) >= 0) {
					t.Fatalf("retired entry %d: its line or its bytes are left in the repaired file", d.Slot)
				}
			}
			// Every key of the filters kept is there.
			lineMin := wordAt(t, path, header.FilterLineOffset(am.Filters[0].Slot)+header.FilterMinIDOffset)
			st := checkWindow(t, path, lineMin, uint64(n), "repaired")
			if st.Retired != am.Retired || len(st.Filters) != len(am.Filters) {
				t.Fatalf("stats: %d retired, %d filters", st.Retired, len(st.Filters))
			}
			if keep > 0 && missingIn(t, path, 1, lineMin-1) < int(lineMin-1)/2 {
				t.Fatalf("the retired filters' keys are still there")
			}
		})
	}
}

// newFileOpts is ringFile without retiring: a 1.1 chain.
func newFileOpts(t testing.TB, n int) string {
	return ringFile(t, n, n, n+1)
}

// The kill test of retirement: a child adds keys with increasing ids and,
// in another goroutine, retires the filters below a sliding window, until
// the parent kills it with SIGKILL.
var retireWriters = childproc.Family{Test: "TestRetireKillChild", Prefix: "DABLOOMS_RKILL_"}

const retireWindow = 100

// TestRetireKillChild is the child of TestRetireKill. Log word 0 is 1 once
// the store is open; word 1 the id of the last Add that returned.
func TestRetireKillChild(t *testing.T) {
	retireWriters.Child(t)
	lg, err := childproc.MapShm(retireWriters.Env("LOG"), 2, false)
	if err != nil {
		t.Fatal(err)
	}
	f, err := scaling.Open(retireWriters.Env("PATH"), booted(&scaling.OpenOptions{}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	lg.Store(0, 1)
	go func() {
		for {
			if last := lg.Load(1); last > retireWindow {
				if _, err := f.RetireBefore(last - retireWindow); err != nil {
					panic(err)
				}
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	for id := uint64(1); ; id++ {
		if err := f.Add(key(int(id)), id); err != nil {
			panic(err)
		}
		lg.Store(1, id)
		if id%500 == 0 {
			f.Flush()
		}
	}
}

func TestRetireKill(t *testing.T) {
	trials := 8
	if testing.Short() {
		trials = 4
	}
	trials = envInt("DABLOOMS_RKILL_TRIALS", trials)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	states := map[State]int{}
	cut := 0
	for trial := range trials {
		dir := t.TempDir()
		path := filepath.Join(dir, "rkill.dbl")
		o := ringOpts
		f, err := scaling.Create(path, booted(&o, testBoot))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		lg, err := childproc.MapShm(filepath.Join(dir, "log"), 2, true)
		if err != nil {
			t.Fatal(err)
		}
		p := retireWriters.Start(t, fmt.Sprintf("trial %d", trial), "writer", childproc.KV("PATH", path), childproc.KV("LOG", lg.Name()))
		childproc.Await(t, p, func() bool { return lg.Load(0) == 1 })
		time.Sleep(time.Duration(20+rng.Intn(300)) * time.Millisecond)
		p.Cmd.Process.Signal(syscall.SIGKILL)
		<-p.Done
		last := lg.Load(1)
		lg.Close()
		if last <= 2*retireWindow {
			t.Logf("trial %d: only %d keys added before the kill:\n%s", trial, last, p.Out)
		}

		before := verifyT(t, path)
		states[before.State]++
		if worst := worstBut(before, "metadata"); worst > Dirty || before.State == Dirty && len(before.NeedsRebuild) == 0 {
			// A kill between the writes of the two metadata copies leaves
			// one older: damage Repair restores, the only damage allowed.
			dumpReport(t, before)
			t.Fatalf("trial %d: after kill -9 on this boot, verify says %s", trial, before.State)
		}
		if hasFinding(before, "retired", -1) {
			cut++
		}
		rep, err := Repair(path, booted(&RepairOptions{}, testBoot))
		if err != nil {
			t.Fatalf("trial %d: repair: %v", trial, err)
		}
		if len(rep.NeedsRebuild) > 0 {
			if rep, err = Rebuild(path, keysSource(last+1), booted(&RepairOptions{}, testBoot)); err != nil {
				t.Fatalf("trial %d: rebuild: %v", trial, err)
			}
		}
		after := verifyT(t, path)
		if rep.State != Clean || after.State != Clean {
			dumpReport(t, before)
			dumpReport(t, after)
			t.Fatalf("trial %d: after repair: %s", trial, after.State)
		}
		// The child retired only below last-window: every key from there
		// on, and every key of the chain's first filter on, is present.
		lo := uint64(1)
		if last > retireWindow {
			lo = last - retireWindow
		}
		st := checkWindow(t, path, 1, 0, "stats")
		if len(st.Filters) > 0 && st.Filters[0].FirstID <= last {
			lo = min(lo, st.Filters[0].FirstID)
		}
		checkWindow(t, path, lo, last, fmt.Sprintf("trial %d (%d keys, %d retired)", trial, last, st.Retired))
	}
	t.Logf("%d trials: verdicts before repair %v; %d kills cut a retirement short", trials, states, cut)
}
