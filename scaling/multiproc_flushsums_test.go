package scaling_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dablooms/dablooms/internal/childproc"
	"github.com/dablooms/dablooms/recover"
	"github.com/dablooms/dablooms/scaling"
)

// Page checksums kept by flushes that race writers in other processes
// (docs/FORMAT.md, "Page checksums"; issue 29): two writer processes add
// and remove keys through shared handles, growing the file, while the
// parent flushes in a loop, so that flushes take marks and checksums of
// pages another process is changing. Then the writers stop and close, one
// final quiet Flush marks the file clean, and recover.Verify, which reads
// every page of a clean file, must find it clean with no page checksum
// finding; every key added and not removed must still be found.
//
// Each writer waits, every mpfsStep operations, for a flush the parent
// began after the writer reached that point: however the machine
// schedules the processes, flushes run while each writer is mid-way.
//
// This is the no-false-alarm check of issue 29 across processes: its
// power against a flush that reads a page before taking its mark is
// TestFlushLeavesLateChangesMarked's (with the parent's handle switched
// to that order, Knobs.PageSumsReadFirst, 5 runs of this test still
// passed: the window is too narrow to hit among this many pages).

var flushSumsChildren = childproc.Family{Test: "TestMPFlushSumsChild", Prefix: "DABLOOMS_MPFS_"}

// Control words (after childproc's barrier words).
const (
	mpfsFlushes = 128 // flushes the parent has finished
	mpfsDone    = 136 // writers that finished their operations
)

const (
	mpfsWriters = 2
	mpfsStep    = 500 // operations between a writer's waits for a flush
	mpfsLag     = 40  // writer p removes, at every even i, its key i-mpfsLag
)

func mpfsKey(p, i int) []byte { return childproc.WriterKey(p, i) }
func mpfsID(p, i int) uint64  { return childproc.WriterID("interleaved", p, i, mpfsWriters) }

// mpfsRemoved reports whether writer p's key j is removed by the end, of
// n operations.
func mpfsRemoved(j, n int) bool { return j+mpfsLag < n && (j+mpfsLag)%2 == 0 }

// TestMPFlushSumsChild is the entry point of the children.
func TestMPFlushSumsChild(t *testing.T) {
	role := flushSumsChildren.Child(t)
	ctl, err := childproc.MapShm(flushSumsChildren.Env("CTL"), childproc.CtlWords, false)
	if err == nil {
		if role == "writer" {
			err = mpfsWriter(ctl, flushSumsChildren.EnvInt("P"), flushSumsChildren.EnvInt("OPS"))
		} else {
			err = fmt.Errorf("unknown child role %q", role)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "child %s (pid %d): %v\n", role, os.Getpid(), err)
		os.Exit(2)
	}
}

func mpfsWriter(ctl *childproc.Shm, p, n int) error {
	f, err := scaling.Open(flushSumsChildren.Env("PATH"), nil)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := childproc.Barrier(ctl, 0, mpfsWriters+1); err != nil {
		return err
	}
	for i := range n {
		if i%mpfsStep == 0 {
			// Wait for a flush that begins after this point.
			want := ctl.Load(mpfsFlushes) + 2
			for ctl.Load(mpfsFlushes) < want {
				if ctl.Load(childproc.CtlAbort) != 0 {
					return fmt.Errorf("aborted by the parent")
				}
				time.Sleep(50 * time.Microsecond)
			}
		}
		if err := f.Add(mpfsKey(p, i), mpfsID(p, i)); err != nil {
			return fmt.Errorf("Add %d: %w", i, err)
		}
		if i >= mpfsLag && i%2 == 0 {
			if err := f.Remove(mpfsKey(p, i-mpfsLag), mpfsID(p, i-mpfsLag)); err != nil {
				return fmt.Errorf("Remove %d: %w", i-mpfsLag, err)
			}
		}
	}
	ctl.Add(mpfsDone, 1)
	return f.Close()
}

func TestMPFlushRacingWriters(t *testing.T) {
	ops := 20_000 // per writer: about 2 s
	if testing.Short() {
		ops = 6_000
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "f.bloom")
	// Small first filter: the writers grow the file (several filters).
	c, err := scaling.Create(path, &scaling.Options{Capacity: 1000, GrowthFactor: 2, ErrorRate: 0.01, Seed: 29})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	ctl, err := childproc.MapShm(filepath.Join(dir, "ctl"), childproc.CtlWords, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	f, err := scaling.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var procs []*childproc.Proc
	for p := range mpfsWriters {
		procs = append(procs, flushSumsChildren.Start(t, fmt.Sprintf("writer %d", p), "writer",
			childproc.KV("CTL", ctl.Name()), childproc.KV("PATH", path), childproc.KV("P", p), childproc.KV("OPS", ops)))
	}
	if err := childproc.Barrier(ctl, 0, mpfsWriters+1); err != nil {
		t.Fatal(err)
	}
	flushes := 0
	for ctl.Load(mpfsDone) < mpfsWriters && ctl.Load(childproc.CtlAbort) == 0 {
		if err := f.Flush(); err != nil {
			t.Fatalf("flush %d, while the writers write: %v", flushes, err)
		}
		flushes++
		ctl.Store(mpfsFlushes, uint64(flushes))
		for _, p := range procs {
			select {
			case <-p.Done:
				if p.Err != nil {
					ctl.Store(childproc.CtlAbort, 1)
				}
			default:
			}
		}
	}
	childproc.WaitAll(t, ctl, procs, time.Minute)
	if least := ops / mpfsStep; flushes < least {
		t.Fatalf("%d flushes while the writers wrote, want at least %d", flushes, least)
	}
	// The final, quiet Flush: no writer left, the file must end clean.
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if f.DiskSeqnum() == 0 {
		t.Fatal("the final Flush, with no writer left, did not mark the file clean")
	}
	for p := range mpfsWriters {
		for j := range ops {
			if !mpfsRemoved(j, ops) && !f.Contains(mpfsKey(p, j)) {
				t.Fatalf("writer %d's key %d, added and not removed, is not found", p, j)
			}
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := recover.Verify(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range rep.Findings {
		if fd.State != recover.Clean || strings.Contains(fd.Field, "page checksum") {
			t.Errorf("finding: %v", fd)
		}
	}
	if rep.State != recover.Clean || rep.Phase != "clean" {
		t.Errorf("verify: state %v, phase %s; want a clean file", rep.State, rep.Phase)
	}
	if len(rep.Filters) < 3 {
		t.Errorf("%d filters: want the writers to have grown the file", len(rep.Filters))
	}
	t.Logf("%d flushes raced %d writers of %d operations each; %d filters, %d finding(s)", flushes, mpfsWriters, ops, len(rep.Filters), len(rep.Findings))
}
