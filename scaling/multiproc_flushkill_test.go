package scaling_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/childproc"
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/scaling"
	"github.com/dablooms/dablooms/seqnum"
)

// A Flush SIGKILLed in another process, inside its take of the page
// checksums, then a write and a flush here: Verify must find the file
// clean (issue 38, item 1; TestFlushKilledAtEachStep stops the flush at
// each step in one process). The child reports each step of its flush
// (Knobs.FlushStep, which only counts here) in shared memory; the parent
// picks a step of the take at random, waits until the child passes it and
// kills it, so the kills land all over the take, at whatever instruction
// the signal finds.

var flushKillChildren = childproc.Family{Test: "TestMPFlushKillChild", Prefix: "DABLOOMS_MPFK_"}

// Control words (after childproc's barrier words).
const (
	mpfkReady = 128 // the child has the file open
	mpfkGo    = 136 // the parent says flush
	mpfkSteps = 144 // the child's flush steps so far
	mpfkTaken = 152 // the child's flush step at which the take ended (0: not yet)
	mpfkDone  = 160 // the child's flush returned
	mpfkPause = 168 // if not 0: the child's flush stops at this step until the kill
)

// mpfkKeys are added, unflushed, before each trial's flush: most pages
// of the one filter (about 1,700) change.
const mpfkKeys = 150_000

func mpfkKey(i int) []byte { return fmt.Appendf(nil, "mp flush kill %d", i) }

// TestMPFlushKillChild is the entry point of the children.
func TestMPFlushKillChild(t *testing.T) {
	role := flushKillChildren.Child(t)
	err := fmt.Errorf("unknown child role %q", role)
	if role == "flusher" {
		err = mpfkFlusher()
	}
	fmt.Fprintf(os.Stderr, "child %s (pid %d): %v\n", role, os.Getpid(), err)
	os.Exit(2)
}

// mpfkFlusher opens the file, flushes it when the parent says go, and
// waits to be killed.
func mpfkFlusher() error {
	ctl, err := childproc.MapShm(flushKillChildren.Env("CTL"), childproc.CtlWords, false)
	if err != nil {
		return err
	}
	k := &testknobs.Knobs{FlushTakeUnrecorded: flushKillChildren.Env("OLD") == "true"}
	k.FlushStep = func(step string) {
		n := ctl.Load(mpfkSteps) + 1
		ctl.Store(mpfkSteps, n)
		if step == "taken" {
			ctl.Store(mpfkTaken, n)
		}
		for n == ctl.Load(mpfkPause) {
			time.Sleep(time.Millisecond) // until the kill
		}
	}
	o := &scaling.OpenOptions{Exclusive: flushKillChildren.Env("EXCL") == "true"}
	testknobs.Set(o, k)
	f, err := scaling.Open(flushKillChildren.Env("PATH"), o)
	if err != nil {
		return err
	}
	ctl.Store(mpfkReady, 1)
	for ctl.Load(mpfkGo) == 0 {
		time.Sleep(20 * time.Microsecond)
	}
	if err := f.Flush(); err != nil {
		return err
	}
	ctl.Store(mpfkDone, 1)
	time.Sleep(time.Minute) // the parent kills long before
	return fmt.Errorf("not killed")
}

// mpfkWord reads the 8-byte word at off of path.
func mpfkWord(t *testing.T, path string, off int64) uint64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [8]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	return binary.LittleEndian.Uint64(b[:])
}

// flushKill is what killFlushInChild saw.
type flushKill struct {
	steps, taken   uint64 // the child's flush steps, and the one the take ended at (0: it did not)
	inTake, taking bool   // the kill left the phase flushing inside the take; and the taking word set
}

// flushKillHow is how killFlushInChild's child flushes.
type flushKillHow struct {
	pause bool // its flush waits at the step of the kill until the kill
	old   bool // its take is as before the taking word (Knobs.FlushTakeUnrecorded)
	excl  bool // its handle is the file's exclusive writer (OpenOptions.Exclusive)
}

// killFlushInChild starts a child that opens path and flushes it, as how
// says (through shared words at ctlPath), SIGKILLs it once its flush has
// passed step at (or returned), and says where the kill landed.
func killFlushInChild(t *testing.T, path, ctlPath string, at uint64, how flushKillHow) flushKill {
	t.Helper()
	ctl, err := childproc.MapShm(ctlPath, childproc.CtlWords, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	p := flushKillChildren.Start(t, "flusher", "flusher", childproc.KV("PATH", path), childproc.KV("CTL", ctl.Name()),
		childproc.KV("OLD", how.old), childproc.KV("EXCL", how.excl))
	childproc.Await(t, p, func() bool { return ctl.Load(mpfkReady) != 0 })
	if how.pause {
		ctl.Store(mpfkPause, at)
	}
	ctl.Store(mpfkGo, 1)
	childproc.Await(t, p, func() bool { return ctl.Load(mpfkSteps) >= at || ctl.Load(mpfkDone) != 0 })
	p.Cmd.Process.Kill()
	<-p.Done
	k := flushKill{steps: ctl.Load(mpfkSteps), taken: ctl.Load(mpfkTaken)}
	_, phase := seqnum.Unpack(mpfkWord(t, path, header.StateOffset))
	k.inTake = phase == seqnum.Flushing && k.steps > 1 && k.taken == 0
	k.taking = k.inTake && mpfkWord(t, path, header.TakingOffset) != 0
	// An exclusive writer freezes the file from Open to Close (I14): its
	// death leaves the word for the next writer to thaw. Anything else
	// means the child was not the writer how says.
	if frozen := mpfkWord(t, path, header.ReplacedOffset) == header.ReplaceFreezing; frozen != how.excl {
		t.Fatalf("the killed child's handle left the replaced word frozen: %v, but its handle was exclusive: %v", frozen, how.excl)
	}
	return k
}

// mpfkResult is what mpfkTrials saw.
type mpfkResult struct {
	trials, inTake, withTaking, damaged int
	first                               string // the first damage found
}

// mpfkTrials runs trials until inside of them killed the flush inside its
// take (at most 5·inside trials), the child flushing as how says (its
// pause unused).
func mpfkTrials(t *testing.T, inside int, how flushKillHow) mpfkResult {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "f.dbl")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 38))
	var r mpfkResult
	takeSteps := uint64(0) // steps of a whole take, from an unkilled first trial
	for ; r.inTake < inside && r.trials < 5*inside; r.trials++ {
		c, err := scaling.Create(path, &scaling.Options{Capacity: 1_000_000, ErrorRate: 0.01, Seed: rng.Uint64() | 1, Overwrite: true})
		if err != nil {
			t.Fatal(err)
		}
		for i := range mpfkKeys {
			if err := c.Add(mpfkKey(i), uint64(i+1)); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Close(); err != nil { // unflushed: the child's flush takes the pages
			t.Fatal(err)
		}
		// The kill: after a step of the take picked at random (after the
		// whole flush in the first trial, which counts the take's steps).
		at := uint64(1 << 62)
		if takeSteps > 0 {
			at = 2 + rng.Uint64N(takeSteps-2) // past "begun"
		}
		k := killFlushInChild(t, path, filepath.Join(dir, fmt.Sprintf("ctl-%d", r.trials)), at, flushKillHow{old: how.old, excl: how.excl})
		if takeSteps == 0 {
			if takeSteps = k.taken; takeSteps < 100 {
				t.Fatalf("the flush's take had %d steps: too few pages changed to aim kills inside it", takeSteps)
			}
		}
		if k.inTake {
			r.inTake++
			if k.taking {
				r.withTaking++
			}
		}
		steps := k.steps
		// What the documents allow next: write and flush.
		flushKillWrite(t, path, "one more", mpfkKeys+1)
		bad := flushKillFindings(t, path, "the file", mpfkKey, mpfkKeys)
		if len(bad) > 0 {
			r.damaged++
			if r.first == "" {
				r.first = fmt.Sprintf("trial %d (killed after step %d of the flush, of %d to its take's end): %d finding(s), the first: %s", r.trials, steps, takeSteps, len(bad), bad[0])
			}
		}
	}
	return r
}

// flushKillModes are the handles whose Flush the tests kill.
var flushKillModes = []struct {
	name string
	excl bool
}{{"shared", false}, {"exclusive", true}}

// TestMPFlushKill kills a shared handle's Flush, and an exclusive
// handle's: its Flush takes the pages under the handle's hold and the
// file's flush lock, which it holds from Open, and its death leaves the
// file frozen for the next writer to thaw (exclusive.go).
func TestMPFlushKill(t *testing.T) {
	requireLinux(t)
	for _, mode := range flushKillModes {
		t.Run(mode.name, func(t *testing.T) {
			inside := 12
			if testing.Short() {
				inside = 4
			}
			r := mpfkTrials(t, inside, flushKillHow{excl: mode.excl})
			t.Logf("%d trials, %d killed inside the take (%d left the taking word set), %d damaged", r.trials, r.inTake, r.withTaking, r.damaged)
			if r.damaged > 0 {
				t.Errorf("%d of %d files damaged after a flush killed and a write and flush: %s", r.damaged, r.trials, r.first)
			}
			if r.inTake < inside {
				t.Fatalf("only %d of %d kills landed inside the take: the test did not test it", r.inTake, r.trials)
			}
		})
	}
}

// TestMPFlushKillControl: with the child's take as before the taking word
// (Knobs.FlushTakeUnrecorded), kills inside the take must damage files,
// a shared handle's and an exclusive one's.
func TestMPFlushKillControl(t *testing.T) {
	requireLinux(t)
	for _, mode := range flushKillModes {
		t.Run(mode.name, func(t *testing.T) {
			r := mpfkTrials(t, 4, flushKillHow{old: true, excl: mode.excl})
			t.Logf("%d trials, %d killed inside the take, %d damaged: %s", r.trials, r.inTake, r.damaged, r.first)
			if r.damaged == 0 {
				t.Fatalf("no file damaged by %d flushes killed inside the old take: the test cannot see the bug", r.inTake)
			}
		})
	}
}
