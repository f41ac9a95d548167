package scaling

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/childproc"
)

// childOpen opens the file read-write without AllowUnclean, as a second
// writer process starting up would, and reports the outcome.
func childOpen() error {
	ctl, err := childproc.MapShm(children.Env("CTL"), childproc.CtlWords, false)
	if err != nil {
		return err
	}
	ctl.Store(childproc.CtlBarrier, 1) // about to open
	f, err := Open(children.Env("PATH"), nil)
	if err != nil {
		return err
	}
	return f.Close()
}

// TestMPOpenDuringFirstMark: a process opening a file while another,
// live, process makes its first change must succeed. The first change
// records the writer's boot id and moves the phase clean→marking. When the
// boot id was recorded after the compare-and-swap, an Open in between read
// "marking" with the boot id of another (or no) boot and refused the file as
// Dirty ("the machine has restarted since"); TestMPKill9 met it. Now
// seqnum.MarkDirty calls onMark before the CAS. Here the writer is held in
// onMark — exactly where the old order had the window — while a child
// process opens; it is released after 50 ms.
func TestMPOpenDuringFirstMark(t *testing.T) {
	requireFiles(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "mark.dbl")
	f, err := Create(path, &Options{Capacity: 1_000})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctl, err := childproc.MapShm(filepath.Join(dir, "ctl"), childproc.CtlWords, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	m := f.chain.Load().f[0]
	paused, resume, marked := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		marked <- f.words.MarkDirty(&m.line.Mark, func() {
			close(paused)
			<-resume
			f.recordBoot()
		}, func() error { return f.sync(header.HotOffset, header.SlotsOffset-header.HotOffset) })
	}()
	<-paused
	child := children.Start(t, "open", "open", childproc.KV("PATH", path), childproc.KV("CTL", ctl.Name()))
	childproc.Await(t, child, func() bool { return ctl.Load(childproc.CtlBarrier) != 0 })
	time.Sleep(50 * time.Millisecond)
	close(resume)
	if err := <-marked; err != nil {
		t.Fatal(err)
	}
	<-child.Done
	if child.Err != nil {
		t.Fatalf("a second process could not open the file while the first was marking it dirty: %v\n%s", child.Err, child.Out)
	}
	if c := f.Condition(); c != Unflushed {
		t.Fatalf("condition %v after the mark, want unflushed", c)
	}
}
