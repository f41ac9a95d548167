package mmapfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDetach: after Detach the file is closed and no longer mapped, slices
// handed out read zeros instead of faulting, every method refuses, and Close
// unmaps the range; both are idempotent.
func TestDetach(t *testing.T) {
	for _, ro := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "d.bin")
		mf, err := Create(path, 3*PageSize()+8, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := mf.Publish(); err != nil {
			t.Fatal(err)
		}
		b, _ := mf.Bytes(0, 3*PageSize()+8)
		for i := range b {
			b[i] = 0xA5
		}
		if err := mf.Sync(0, int64(len(b))); err != nil {
			t.Fatal(err)
		}
		if ro {
			mf.Close()
			if mf, err = Open(path, &Options{ReadOnly: true}); err != nil {
				t.Fatal(err)
			}
			b, _ = mf.Bytes(0, 3*PageSize()+8)
		}
		if b[len(b)-1] != 0xA5 || !inMaps(t, path) {
			t.Fatalf("ro=%v: mapping not in place before Detach", ro)
		}
		if err := mf.Detach(); err != nil {
			t.Fatalf("ro=%v: Detach: %v", ro, err)
		}
		if err := mf.Detach(); err != nil {
			t.Fatalf("ro=%v: second Detach: %v", ro, err)
		}
		for i, c := range b { // no fault: zero pages
			if c != 0 {
				t.Fatalf("ro=%v: byte %d = %#x after Detach, want 0", ro, i, c)
			}
		}
		if inMaps(t, path) {
			t.Fatalf("ro=%v: file still mapped after Detach", ro)
		}
		if _, err := mf.Bytes(0, 8); !errors.Is(err, ErrClosed) {
			t.Fatalf("ro=%v: Bytes after Detach: %v", ro, err)
		}
		if _, err := mf.Refresh(); !errors.Is(err, ErrClosed) {
			t.Fatalf("ro=%v: Refresh after Detach: %v", ro, err)
		}
		if !ro {
			if err := mf.Grow(8 * PageSize()); !errors.Is(err, ErrClosed) {
				t.Fatalf("Grow after Detach: %v", err)
			}
		}
		// The file itself is untouched.
		if got, err := os.ReadFile(path); err != nil || got[len(got)-1] != 0xA5 {
			t.Fatalf("ro=%v: file after Detach: %v", ro, err)
		}
		if err := mf.Close(); err != nil {
			t.Fatalf("ro=%v: Close after Detach: %v", ro, err)
		}
		if err := mf.Close(); err != nil {
			t.Fatalf("ro=%v: second Close: %v", ro, err)
		}
	}
}

// inMaps reports whether path is mapped in this process.
func inMaps(t *testing.T, path string) bool {
	t.Helper()
	m, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(m), path)
}
