package recover

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/scaling"
)

var errCrash = errors.New("simulated crash")

// TestRepairInterruptedAtEachStep stops Repair at each step as a crash would
// (leaving its temporary file): the path then holds either the old file or
// the new one, never a mix, and a later Repair finishes the job.
func TestRepairInterruptedAtEachStep(t *testing.T) {
	for _, at := range []string{"copied", "patched", "backup", "renamed"} {
		t.Run(at, func(t *testing.T) {
			path := interruptedFile(t)
			old := sum256(t, path)
			crash := func(s string) error {
				if s == at {
					return errCrash
				}
				return nil
			}
			_, err := Repair(path, withKnobs(&RepairOptions{}, &testknobs.Knobs{BootID: testBoot, RecoverStep: crash}))
			if !errors.Is(err, errCrash) {
				t.Fatalf("Repair: %v", err)
			}
			r := verifyT(t, path)
			switch {
			case sum256(t, path) == old:
				if at == "renamed" {
					t.Fatal("the old file is still in place after the rename")
				}
			case r.State == Clean:
				if at != "renamed" {
					t.Fatalf("the new file is in place before the rename (%s)", at)
				}
			default:
				t.Fatalf("the file is neither the old one nor a clean new one: %s", r.State)
			}
			rep, err := Repair(path, booted(&RepairOptions{}, testBoot))
			if err != nil || rep.State != Clean || verifyT(t, path).State != Clean {
				t.Fatalf("Repair after the crash: %v %v", err, rep)
			}
		})
	}
}

// TestRepairOptions covers Output, Backup, DryRun and the nothing-to-do case.
func TestRepairOptions(t *testing.T) {
	t.Run("output", func(t *testing.T) {
		path := interruptedFile(t)
		old := sum256(t, path)
		out := filepath.Join(t.TempDir(), "out.dbl")
		rep, err := Repair(path, booted(&RepairOptions{Output: out}, testBoot))
		if err != nil || rep.State != Clean || rep.Path != out || !rep.Written {
			t.Fatalf("Repair: %v %v", err, rep)
		}
		if sum256(t, path) != old {
			t.Fatal("Repair with Output changed the original")
		}
		if _, err := os.Stat(path + ".bak"); !os.IsNotExist(err) {
			t.Fatal("Repair with Output made a backup")
		}
		if verifyT(t, out).State != Clean {
			t.Fatal("the output is not clean")
		}
	})
	t.Run("backup", func(t *testing.T) {
		path := interruptedFile(t)
		old := sum256(t, path)
		bak := filepath.Join(filepath.Dir(path), "keep.old")
		if err := os.WriteFile(bak, []byte("stale"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Repair(path, booted(&RepairOptions{Backup: bak}, testBoot)); err != nil {
			t.Fatal(err)
		}
		if sum256(t, bak) != old {
			t.Fatal("the backup is not the original")
		}
		if verifyT(t, bak).State != Interrupted || verifyT(t, path).State != Clean {
			t.Fatal("wrong states after repair")
		}
	})
	t.Run("dry run", func(t *testing.T) {
		path := interruptedFile(t)
		old := sum256(t, path)
		rep, err := Repair(path, booted(&RepairOptions{DryRun: true}, testBoot))
		if err != nil || rep.State != Clean || len(rep.Actions) == 0 || rep.Written {
			t.Fatalf("dry run: %v %v", err, rep)
		}
		if sum256(t, path) != old {
			t.Fatal("a dry run changed the file")
		}
		ents, _ := os.ReadDir(filepath.Dir(path))
		if len(ents) != 1 {
			t.Fatalf("a dry run left %d entries in the directory", len(ents))
		}
	})
	t.Run("nothing to do", func(t *testing.T) {
		path := newFile(t, 1000, counting4.Classic, 20)
		old := sum256(t, path)
		rep, err := Repair(path, booted(&RepairOptions{}, testBoot))
		if err != nil || rep.State != Clean || rep.Written {
			t.Fatalf("Repair: %v %v", err, rep)
		}
		if sum256(t, path) != old {
			t.Fatal("Repair of a clean file changed it")
		}
		if _, err := os.Stat(path + ".bak"); !os.IsNotExist(err) {
			t.Fatal("Repair of a clean file made a backup")
		}
	})
	t.Run("no backup", func(t *testing.T) {
		for _, live := range []bool{true, false} {
			path := interruptedFile(t)
			if !live {
				withoutLiveReplace(t, path)
			}
			rep, err := Repair(path, booted(&RepairOptions{NoBackup: true}, testBoot))
			if err != nil || rep.State != Clean || rep.Backup != "" || !rep.Written {
				t.Fatalf("Repair with NoBackup (live %v): %v, backup %q, written %v", live, err, rep.Backup, rep != nil && rep.Written)
			}
			ents, _ := os.ReadDir(filepath.Dir(path))
			if len(ents) != 1 || verifyT(t, path).State != Clean {
				t.Fatalf("Repair with NoBackup (live %v) left %d entries in the directory, want the file alone", live, len(ents))
			}
		}
		path := interruptedFile(t)
		old := sum256(t, path)
		if _, err := Repair(path, booted(&RepairOptions{NoBackup: true, Backup: path + ".old"}, testBoot)); !errors.Is(err, scaling.ErrInvalidOption) {
			t.Fatalf("Backup with NoBackup: %v, want ErrInvalidOption", err)
		}
		if sum256(t, path) != old {
			t.Fatal("Repair refused its options but changed the file")
		}
	})
	t.Run("no source", func(t *testing.T) {
		if _, err := Rebuild(interruptedFile(t), nil, nil); !errors.Is(err, ErrNoSource) {
			t.Fatal(err)
		}
	})
}

// TestRepairBusy: Repair refuses while a writer has a file without
// FlagLiveReplace open (its slot lock), at once without Wait, and goes ahead
// when the writer closes within Wait. Verify meanwhile reports the live slot
// and changes nothing. (A file with the flag is repaired while open:
// TestRewriteLive.)
func TestRepairBusy(t *testing.T) {
	path := interruptedFile(t)
	withoutLiveReplace(t, path)
	f, err := scaling.Open(path, booted(&scaling.OpenOptions{AllowUnclean: true}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	r := verifyT(t, path)
	live := 0
	for _, s := range r.Slots {
		if s.Live {
			live++
		}
	}
	if live != 1 {
		t.Fatalf("Verify sees %d live slots, want 1", live)
	}
	start := time.Now()
	_, err = Repair(path, booted(&RepairOptions{}, testBoot))
	if !errors.Is(err, ErrBusy) || time.Since(start) > time.Second {
		t.Fatalf("Repair of a file in use: %v after %v", err, time.Since(start))
	}
	if !strings.Contains(err.Error(), "slot") {
		t.Fatalf("the error does not say what holds the file: %v", err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		f.Close()
	}()
	rep, err := Repair(path, booted(&RepairOptions{Wait: 5 * time.Second}, testBoot))
	if err != nil || rep.State != Clean {
		t.Fatalf("Repair with Wait: %v %v", err, rep)
	}
}

// TestVerifyReport checks the report's numbers on a known file.
func TestVerifyReport(t *testing.T) {
	path := interruptedFile(t)
	r := verifyT(t, path)
	if r.State != Interrupted || r.Phase != "dirty" || !r.BootMatches || r.MemSeqnum != 0 || r.DiskSeqnum != 0 {
		t.Fatalf("report: %+v", r)
	}
	if len(r.Filters) != 1 || r.Filters[0].Items != 300 || !r.Filters[0].Dirty || r.Filters[0].FirstID != 1 || r.Filters[0].LastID != 300 {
		t.Fatalf("filter report: %+v", r.Filters)
	}
	found := false
	for _, s := range r.Slots {
		for _, op := range s.InFlight {
			if s.Slot == 5 && op.Record == 3 && op.Op == "add" && op.Filter == 0 && op.Changed != 0 && !s.Live {
				found = true
			}
		}
	}
	if !found {
		t.Fatalf("the cut-short add is not in the report: %+v", r.Slots)
	}
	if !errors.Is(r.Err(), scaling.ErrUnclean) {
		t.Fatalf("Err: %v", r.Err())
	}
	for _, s := range []State{Clean, Unflushed, Interrupted, Dirty, Damaged, Corrupt} {
		if strings.HasPrefix(s.String(), "condition(") {
			t.Fatalf("state %d has no name", s)
		}
	}
	if _, err := Verify(filepath.Join(t.TempDir(), "missing")); !os.IsNotExist(err) {
		t.Fatalf("Verify of a missing file: %v", err)
	}
}

func TestRepairRefusesOpenReader(t *testing.T) {
	path := newFile(t, 100, counting4.Blocked512, 10)
	withoutLiveReplace(t, path)
	flipByte(t, path, header.MetaBOffset) // something to repair
	reader, err := scaling.Open(path, &scaling.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Repair(path, booted(&RepairOptions{}, testBoot)); !errors.Is(err, ErrBusy) {
		t.Fatalf("Repair with a reader open: %v, want ErrBusy", err)
	}
	if r := verifyT(t, path); r.State != Damaged {
		t.Fatalf("Verify with a reader open: %v", r.State)
	}
	out := filepath.Join(t.TempDir(), "out.dbl")
	if rep, err := Repair(path, booted(&RepairOptions{Output: out}, testBoot)); err != nil || rep.State != Clean {
		t.Fatalf("Repair into Output with a reader open: %v, %v", err, rep)
	}
	if _, err := Repair(path, booted(&RepairOptions{DryRun: true}, testBoot)); err != nil {
		t.Fatalf("dry run with a reader open: %v", err)
	}
	// Neither Verify, the dry run nor Output took the open lock: a
	// repair in place is still refused while the reader is open.
	if _, err := Repair(path, booted(&RepairOptions{}, testBoot)); !errors.Is(err, ErrBusy) {
		t.Fatalf("second Repair with a reader open: %v, want ErrBusy", err)
	}
	reader.Close()
	if rep, err := Repair(path, booted(&RepairOptions{}, testBoot)); err != nil || rep.State != Clean {
		t.Fatalf("Repair after the reader closed: %v, %v", err, rep)
	}
}

// TestRepairStaleReplacedWord: a file whose replaced word says ReplaceDone
// while it is the file at its path (what Backup used to copy from a file a
// Compact replaced) is refused by Open. Verify says damaged; Repair's
// report must say what it changed, in a dry run and for real alike, and
// Open must then succeed. (Repair's own freeze used to overwrite the word
// before it looked, so it reported "nothing to repair" and yet, by
// clearing the word as it let go, changed the file.)
func TestRepairStaleReplacedWord(t *testing.T) {
	path := newFile(t, 1000, counting4.Blocked1024, 200)
	fh, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	var w [8]byte
	le.PutUint64(w[:], header.ReplaceDone)
	_, err = fh.WriteAt(w[:], header.ReplacedOffset)
	fh.Close()
	if err != nil {
		t.Fatal(err)
	}
	if c, err := scaling.Open(path, booted(&scaling.OpenOptions{ReadOnly: true}, testBoot)); err == nil {
		c.Close()
		t.Fatal("Open accepts the damaged file: the test shows nothing")
	}
	if r := verifyT(t, path); r.State != Damaged {
		dumpReport(t, r)
		t.Fatalf("Verify: %s, want damaged", r.State)
	}
	says := func(rep *Report) bool {
		for _, a := range rep.Actions {
			if strings.Contains(a, "cleared the replaced word") {
				return true
			}
		}
		return false
	}
	before := sum256(t, path)
	dry, err := Repair(path, booted(&RepairOptions{DryRun: true}, testBoot))
	if err != nil || !says(dry) || sum256(t, path) != before {
		t.Fatalf("dry run: %v; actions %q; file changed: %v", err, dry.Actions, sum256(t, path) != before)
	}
	rep, err := Repair(path, booted(&RepairOptions{}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	if !says(rep) || rep.State != Clean || rep.Backup == "" {
		dumpReport(t, rep)
		t.Fatalf("Repair reports %s, backup %q, actions %q; want the word cleared", rep.State, rep.Backup, rep.Actions)
	}
	c, err := scaling.Open(path, booted(&scaling.OpenOptions{}, testBoot))
	if err != nil {
		t.Fatalf("after Repair: %v", err)
	}
	defer c.Close()
	for i := 1; i <= 200; i++ {
		if !c.Contains(key(i)) {
			t.Fatalf("Repair lost key %d", i)
		}
	}
}

// TestRepairCleanFileNoFindings: Repair in place of a clean file (format
// 1.3: frozen while it works) reports no finding, not the replaced word
// its own freeze stored, and leaves the file as it is. A rewrite that died
// holding the file (the word left ReplaceFreezing, the growth lock free)
// is still reported, as Verify reports it.
func TestRepairCleanFileNoFindings(t *testing.T) {
	path := newFile(t, 1000, counting4.Blocked1024, 20)
	if r := verifyT(t, path); len(r.Findings) != 0 {
		dumpReport(t, r)
		t.Fatal("Verify of a fresh file has findings")
	}
	old := sum256(t, path)
	for _, dry := range []bool{true, false} {
		rep, err := Repair(path, booted(&RepairOptions{DryRun: dry}, testBoot))
		if err != nil {
			t.Fatal(err)
		}
		if rep.State != Clean || len(rep.Findings) != 0 || rep.Backup != "" {
			dumpReport(t, rep)
			t.Fatalf("Repair (dry run %v) of a clean file: %s, %d finding(s), backup %q; want clean, none, none", dry, rep.State, len(rep.Findings), rep.Backup)
		}
	}
	if sum256(t, path) != old {
		t.Fatal("Repair of a clean file changed it")
	}

	// A dead rewrite's word: reported by both, cleared by Repair.
	fh, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	var w [8]byte
	le.PutUint64(w[:], header.ReplaceFreezing)
	_, err = fh.WriteAt(w[:], header.ReplacedOffset)
	fh.Close()
	if err != nil {
		t.Fatal(err)
	}
	replacedNote := func(r *Report) bool {
		for _, f := range r.Findings {
			if f.Field == "replaced" {
				return true
			}
		}
		return false
	}
	if r := verifyT(t, path); !replacedNote(r) {
		dumpReport(t, r)
		t.Fatal("Verify does not report the word a dead rewrite left")
	}
	rep, err := Repair(path, booted(&RepairOptions{}, testBoot))
	if err != nil || !replacedNote(rep) {
		dumpReport(t, rep)
		t.Fatalf("Repair does not report the word a dead rewrite left: %v", err)
	}
	if said := strings.Join(rep.Actions, "; "); !strings.Contains(said, "cleared") {
		t.Fatalf("Repair changed the replaced word but its actions do not say so: %q", said)
	}
	if r := verifyT(t, path); len(r.Findings) != 0 {
		dumpReport(t, r)
		t.Fatal("the dead rewrite's word is still there after Repair")
	}
}

// TestRepairSummarySaysWhatItDoes: the action and finding that say how
// Repair ends a filter's cut-short operations name what it does to them,
// never "rolls back 0 and completes 0" for an operation that had changed
// nothing yet; the slot freed says how many operations it had in flight.
func TestRepairSummarySaysWhatItDoes(t *testing.T) {
	for _, tc := range []struct {
		budget int
		want   string // one of the words
	}{{2, "drops 1 that had changed no counter yet"}, {7, "ends 1 cut-short operation exactly: "}} {
		path := interruptedAfter(t, tc.budget)
		rep, err := Repair(path, booted(&RepairOptions{DryRun: true}, testBoot))
		if err != nil {
			t.Fatal(err)
		}
		var said []string
		freed := false
		for _, a := range rep.Actions {
			if strings.Contains(a, "cut-short") {
				said = append(said, a)
			}
			freed = freed || strings.Contains(a, "freed slot 5 of a dead writer") && strings.HasSuffix(a, "which had 1 operation in flight")
		}
		if !freed {
			t.Errorf("budget %d: no action says slot 5 is freed with its 1 operation in flight: %q", tc.budget, rep.Actions)
		}
		for _, f := range verifyT(t, path).Findings {
			if f.Field == "filter" {
				said = append(said, f.Message)
			}
		}
		if len(said) != 2 {
			t.Fatalf("budget %d: want one action and one finding on the cut-short operation, got %q", tc.budget, said)
		}
		for _, s := range said {
			if strings.Contains(s, " 0 ") || !strings.Contains(s, tc.want) {
				t.Errorf("budget %d: %q: want %q and no count of 0", tc.budget, s, tc.want)
			}
		}
	}
}
