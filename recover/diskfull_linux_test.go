package recover_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/recover"
	"github.com/dablooms/dablooms/scaling"
)

// TestDiskFull: on a 1 MiB tmpfs, growth fails with ENOSPC (fallocate, not a
// SIGBUS later), the file stays valid and reopens with every key; Repair on
// the full disk fails without touching the original.
func TestDiskFull(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a 1 MiB tmpfs at %s (%v): the disk-full test needs root and permission to mount", mnt, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, 0); err != nil {
			syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
	})
	path := filepath.Join(mnt, "full.dbl")
	f, err := scaling.Create(path, recover.Booted(&scaling.Options{Capacity: 4000, ErrorRate: 0.01, GrowthFactor: 4, Layout: counting4.Classic, Seed: 1, Reserve: 1 << 30}, recover.TestBoot))
	if err != nil {
		t.Fatal(err)
	}
	added := 0
	for i := 1; i < 1_000_000; i++ {
		if err = f.Add(recover.Key(i), uint64(i)); err != nil {
			break
		}
		added = i
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Add on a full disk: %v, want ENOSPC", err)
	}
	t.Logf("the disk filled after %d keys in %d filters: %v", added, len(f.Stats().Filters), err)
	if err := f.Add(recover.Key(added+1), uint64(added+1)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Add again: %v, want ENOSPC", err)
	}
	for i := 1; i <= added; i++ {
		if !f.Contains(recover.Key(i)) {
			t.Fatalf("key %d lost", i)
		}
	}
	if err := f.Flush(); err != nil {
		t.Fatalf("Flush on a full disk (no allocation needed): %v", err)
	}
	f.Close()
	r := recover.VerifyT(t, path)
	if r.State != recover.Clean {
		recover.DumpReport(t, r)
		t.Fatalf("after the disk filled: %s", r.State)
	}
	sum := recover.Sum256(t, path)
	// Repair has no room for its copy: it fails, the original is untouched,
	// and no temporary file is left behind.
	if _, err := recover.Repair(path, recover.Booted(&recover.RepairOptions{Output: filepath.Join(mnt, "copy.dbl")}, recover.TestBoot)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Repair into a full disk: %v, want ENOSPC", err)
	} else {
		t.Logf("Repair into the full disk: %v", err)
	}
	if recover.Sum256(t, path) != sum {
		t.Fatal("a failed Repair changed the file")
	}
	ents, _ := os.ReadDir(mnt)
	if len(ents) != 1 {
		t.Fatalf("the directory holds %d entries after a failed Repair", len(ents))
	}
	f, err = scaling.Open(path, recover.Booted(&scaling.OpenOptions{}, recover.TestBoot))
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer f.Close()
	for i := 1; i <= added; i++ {
		if !f.Contains(recover.Key(i)) {
			t.Fatalf("key %d lost after reopen", i)
		}
	}
}
