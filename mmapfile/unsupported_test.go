//go:build !linux

package mmapfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestUnsupported: off Linux, files fail at once with ErrUnsupported (and
// leave nothing behind); heap regions work.
func TestUnsupported(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.dablooms")
	if _, err := Create(path, 4096, nil); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Create = %v, want ErrUnsupported", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("Create left %d files", len(ents))
	}
	if err := os.WriteFile(path, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, &Options{AllowNetworkFS: true}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Open = %v, want ErrUnsupported", err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := LockFile(f, 0, false, 0); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("LockFile = %v, want ErrUnsupported", err)
	}
	if _, err := HeldFile(f, 0); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("HeldFile = %v, want ErrUnsupported", err)
	}
	if got := BootID(); got != unknownBoot {
		t.Fatalf("BootID = %q, want %q", got, unknownBoot)
	}
	h := NewHeap(64)
	if err := h.Grow(128); err != nil {
		t.Fatal(err)
	}
}
