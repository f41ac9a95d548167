package scaling_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/childproc"
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/recover"
	"github.com/dablooms/dablooms/scaling"
)

// Replacing a live file across processes (docs/FORMAT.md, "Replacing a
// live file"): a writer process adds keys and publishes how many Adds have
// returned; a read-only process looks up every key whose Add had returned
// before the lookup, over and over; meanwhile the parent compacts the file
// (recover.Compact, its Source yielding every key added so far) and
// repairs it in place (recover.Repair, of a damaged metadata copy), each
// renaming a new file over the path. No lookup may miss a key, the
// writer's Adds must go on into the new file, and after each rewrite no
// process may keep the old file open (its open lock is released).
// Negative control: a reader that ignores the replaced word
// (testknobs.Knobs.SkipReplaceCheck) answers from the old file and misses the Adds
// made after the rewrite.

var replaceChildren = childproc.Family{Test: "TestMPReplaceChild", Prefix: "DABLOOMS_MPR_"}

// Control words.
const (
	mprProgress   = 64 // Adds of the writer that have returned
	mprStop       = 72 // set by the parent: the children finish
	mprFalseNeg   = 80 // lookups of returned Adds that found nothing
	mprChecks     = 88 // lookups made
	mprReaderOpen = 96
	mprFirstMiss  = 104 // 1 + the first key missed
)

const mprBase = 1000 // keys the file holds before the children start

func mprKey(i int) []byte { return fmt.Appendf(nil, "mpr-%07d", i) }

// TestMPReplaceChild is the entry point of the children.
func TestMPReplaceChild(t *testing.T) {
	role := replaceChildren.Child(t)
	ctl, err := childproc.MapShm(replaceChildren.Env("CTL"), childproc.CtlWords, false)
	if err == nil {
		switch role {
		case "writer":
			err = mprWriter(ctl)
		case "reader":
			err = mprReader(ctl)
		default:
			err = fmt.Errorf("unknown child role %q", role)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "child %s (pid %d): %v\n", role, os.Getpid(), err)
		os.Exit(2)
	}
}

func mprWriter(ctl *childproc.Shm) error {
	f, err := scaling.Open(replaceChildren.Env("PATH"), nil)
	if err != nil {
		return err
	}
	defer f.Close()
	for i := mprBase; ctl.Load(mprStop) == 0; i++ {
		if err := f.Add(mprKey(i), uint64(i)); err != nil {
			return fmt.Errorf("Add %d: %w", i, err)
		}
		ctl.Store(mprProgress, uint64(i+1))
		if i%64 == 0 {
			time.Sleep(200 * time.Microsecond) // leave the rewrites some CPU
		}
	}
	return f.Flush()
}

func mprReader(ctl *childproc.Shm) error {
	o := &scaling.OpenOptions{ReadOnly: true}
	testknobs.Set(o, &testknobs.Knobs{SkipReplaceCheck: replaceChildren.Env("CONTROL") == "1"})
	f, err := scaling.Open(replaceChildren.Env("PATH"), o)
	if err != nil {
		return err
	}
	defer f.Close()
	ctl.Store(mprReaderOpen, 1)
	check := func(i int) {
		ctl.Add(mprChecks, 1)
		if !f.Contains(mprKey(i)) {
			if ctl.Load(mprFalseNeg) == 0 {
				ctl.Store(mprFirstMiss, uint64(i+1))
			}
			ctl.Add(mprFalseNeg, 1)
		}
	}
	seen := mprBase
	for ctl.Load(mprStop) == 0 {
		p := int(ctl.Load(mprProgress)) // every key below returned from Add
		for i := seen; i < p; i++ {
			check(i)
		}
		seen = max(seen, p)
		for range 64 {
			check(rand.IntN(max(seen, 1)))
		}
		time.Sleep(100 * time.Microsecond)
	}
	for i := range int(ctl.Load(mprProgress)) { // the writer has stopped
		check(i)
	}
	return nil
}

func TestMPReplaceLive(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	for _, control := range []bool{false, true} {
		t.Run(fmt.Sprintf("control=%v", control), func(t *testing.T) { mprRun(t, control) })
	}
}

func mprRun(t *testing.T, control bool) {
	dir := t.TempDir()
	path := filepath.Join(dir, "live.dbl")
	// Room for every key: no growth rewrites the metadata the Repair
	// rounds damage.
	f, err := scaling.Create(path, &scaling.Options{Capacity: 200_000, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	for i := range mprBase {
		if err := f.Add(mprKey(i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ctl, err := childproc.MapShm(filepath.Join(dir, "ctl"), childproc.CtlWords, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	ctl.Store(mprProgress, mprBase)
	env := []string{childproc.KV("PATH", path), childproc.KV("CTL", ctl.Name()), childproc.KV("CONTROL", map[bool]int{false: 0, true: 1}[control])}
	w := replaceChildren.Start(t, "writer", "writer", env...)
	r := replaceChildren.Start(t, "reader", "reader", env...)
	childproc.Await(t, r, func() bool { return ctl.Load(mprReaderOpen) != 0 })
	advance := func(n uint64) {
		p0 := ctl.Load(mprProgress)
		childproc.Await(t, w, func() bool { return ctl.Load(mprProgress) >= p0+n })
	}
	advance(1000)

	rounds := []string{"compact", "repair", "compact", "repair"}
	if control {
		rounds = rounds[:1]
	}
	for _, round := range rounds {
		old, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		switch round {
		case "compact":
			// Called while the file is frozen: the writer's count holds still.
			src := func(first, last uint64, add func([]byte, uint64) error) error {
				for i := range int(ctl.Load(mprProgress)) {
					if err := add(mprKey(i), uint64(i)); err != nil {
						return err
					}
				}
				return nil
			}
			if _, err := recover.Compact(path, src, &recover.CompactOptions{Capacity: 200_000}); err != nil {
				t.Fatalf("Compact of the live file: %v", err)
			}
		case "repair":
			// Something to repair: metadata copy B's checksum.
			if _, err := old.WriteAt([]byte{0xff, 0xfe}, header.MetaBOffset+header.MetaSize-4); err != nil {
				t.Fatal(err)
			}
			rep, err := recover.Repair(path, &recover.RepairOptions{Backup: filepath.Join(dir, "live.bak")})
			if err != nil {
				t.Fatalf("Repair of the live file: %v", err)
			}
			cur, err1 := os.Stat(path)
			was, err2 := old.Stat()
			if err1 != nil || err2 != nil || os.SameFile(cur, was) {
				t.Fatalf("Repair left the file in place (%v, %v): %v", err1, err2, rep.Actions)
			}
		}
		advance(1000) // the writer goes on, in the new file
		if !control {
			scaling.OldOpenLockReleased(t, old)
		}
		old.Close()
	}
	ctl.Store(mprStop, 1)
	childproc.WaitAll(t, ctl, []*childproc.Proc{w, r}, time.Minute)
	fn, checks := ctl.Load(mprFalseNeg), ctl.Load(mprChecks)
	t.Logf("%d rounds, %d keys added, %d lookups, %d false negatives (first: key %d)", len(rounds), ctl.Load(mprProgress), checks, fn, int(ctl.Load(mprFirstMiss))-1)
	if control {
		if fn == 0 {
			t.Fatal("negative control: the reader that ignores the replaced word missed nothing")
		}
		return
	}
	if fn != 0 || checks == 0 {
		t.Fatalf("%d of %d lookups missed a key whose Add had returned", fn, checks)
	}
	g, err := scaling.Open(path, &scaling.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for i := range int(ctl.Load(mprProgress)) {
		if !g.Contains(mprKey(i)) {
			t.Fatalf("key %d is not in the file at the path", i)
		}
	}
}
