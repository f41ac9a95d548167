package scaling_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/childproc"
	"github.com/dablooms/dablooms/internal/failpoint"
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/recover"
	"github.com/dablooms/dablooms/scaling"
)

// A growth SIGKILLed between its two metadata copies, in another process:
// the child adds keys until a growth's writeMeta has encoded its first copy
// and calls msync for it, and there, with the copies different in the page
// cache, kills itself. The parent finds the file as such a kill leaves it
// (Verify: damaged, a metadata write cut short), then opens it, adds and
// flushes, and Verify must find it clean with every key the child added
// (TestMetaWriteCutShort makes the same bytes without a kill).

var metaKillChildren = childproc.Family{Test: "TestMPMetaKillChild", Prefix: "DABLOOMS_MPMK_"}

// Control words (after childproc's barrier words).
const (
	mpmkAdded = 128 // the child's Adds that returned
	mpmkKill  = 136 // 1 once the child is about to kill itself
)

func mpmkKey(i int) []byte { return fmt.Appendf(nil, "mp meta kill %d", i) }

// TestMPMetaKillChild is the entry point of the children.
func TestMPMetaKillChild(t *testing.T) {
	role := metaKillChildren.Child(t)
	err := fmt.Errorf("unknown child role %q", role)
	if role == "grower" {
		err = mpmkGrower()
	}
	fmt.Fprintf(os.Stderr, "child %s (pid %d): %v\n", role, os.Getpid(), err)
	os.Exit(2)
}

// metaCopiesDiffer reports whether the two metadata copies of the file at
// path, as the page cache holds them, list different directories (or one
// does not decode).
func metaCopiesDiffer(path string) bool {
	b := make([]byte, 2*header.MetaSize)
	fh, err := os.Open(path)
	if err != nil {
		return false
	}
	defer fh.Close()
	if _, err := fh.ReadAt(b, 0); err != nil {
		return false
	}
	a, errA := header.Decode(b[:header.MetaSize], header.MetaAOffset, -1)
	c, errB := header.Decode(b[header.MetaSize:], header.MetaBOffset, -1)
	if errA != nil || errB != nil {
		return true
	}
	return !a.SameDirectory(c)
}

// mpmkGrower adds keys to the file until an msync finds the metadata
// copies different, which is a growth's writeMeta between its copies, and
// kills itself there.
func mpmkGrower() error {
	ctl, err := childproc.MapShm(metaKillChildren.Env("CTL"), childproc.CtlWords, false)
	if err != nil {
		return err
	}
	path := metaKillChildren.Env("PATH")
	k := &testknobs.Knobs{Failpoints: &failpoint.Points{Msync: func() error {
		if metaCopiesDiffer(path) {
			ctl.Store(mpmkKill, 1)
			if self, err := os.FindProcess(os.Getpid()); err == nil {
				self.Kill() // SIGKILL on Linux
			}
			time.Sleep(time.Minute)
		}
		return nil
	}}}
	o := &scaling.OpenOptions{}
	testknobs.Set(o, k)
	f, err := scaling.Open(path, o)
	if err != nil {
		return err
	}
	start := metaKillChildren.EnvU64("START")
	for i := 0; i < 50_000_000; i++ {
		if err := f.Add(mpmkKey(i), start+uint64(i)); err != nil {
			return err
		}
		ctl.Store(mpmkAdded, uint64(i+1))
	}
	return fmt.Errorf("50 million adds and no growth killed")
}

// killGrowthInMetaWrite has a child process add mpmkKey(i) with id
// start+i to the file at path until a growth's metadata write is between
// its copies, where the child SIGKILLs itself (mpmkGrower); it returns how
// many of the child's Adds returned. The copies differ afterwards.
func killGrowthInMetaWrite(t *testing.T, path, ctlPath string, start uint64) (added int) {
	t.Helper()
	ctl, err := childproc.MapShm(ctlPath, childproc.CtlWords, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	p := metaKillChildren.Start(t, "grower", "grower", childproc.KV("PATH", path), childproc.KV("CTL", ctl.Name()), childproc.KV("START", start))
	select {
	case <-p.Done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the child did not kill itself within 2 minutes:\n%s", p.Out)
	}
	if ctl.Load(mpmkKill) != 1 {
		t.Fatalf("the child exited (%v) without the kill:\n%s", p.Err, p.Out)
	}
	if !metaCopiesDiffer(path) {
		t.Fatal("killed inside a metadata write, but the copies are alike")
	}
	return int(ctl.Load(mpmkAdded))
}

func TestMPMetaWriteKill(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.dbl")
	f, err := scaling.Create(path, &scaling.Options{Capacity: 2000, ErrorRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	added := killGrowthInMetaWrite(t, path, filepath.Join(dir, "ctl"), 0)
	r, err := recover.Verify(path)
	if err != nil || r.State != recover.Damaged {
		t.Fatalf("verify after the kill: %v, %v; want damaged (a metadata write cut short); findings %v", r.State, err, r.Findings)
	}
	g, err := scaling.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Add([]byte("after"), uint64(added)); err != nil {
		t.Fatal(err)
	}
	if err := g.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if r, err = recover.Verify(path); err != nil || r.State != recover.Clean {
		t.Fatalf("verify after open, add and flush: %v, %v; findings %v", r.State, err, r.Findings)
	}
	g, err = scaling.Open(path, &scaling.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for i := range added {
		if !g.Contains(mpmkKey(i)) {
			t.Fatalf("key %d of the %d the child added is lost", i, added)
		}
	}
	t.Logf("killed after %d adds, inside a growth's metadata write", added)
}
