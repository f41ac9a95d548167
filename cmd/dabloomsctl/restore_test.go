package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/dablooms/dablooms/scaling"
)

// TestBackupRestore: backup keeps the file's mode; restore puts the backup
// back over a file a writer has open, and the writer moves to it (a key
// added after the backup is gone); a damaged backup is refused with the
// file left as it was.
func TestBackupRestore(t *testing.T) {
	dir := t.TempDir()
	f, bak := filepath.Join(dir, "f.dbl"), filepath.Join(dir, "b.dbl")
	for _, args := range [][]string{
		{"create", f, "--capacity", "1000", "--error-rate", "0.01"},
		{"add", f, "before", "--id", "1"},
	} {
		if r := cli(t, "", args...); r.code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
	}
	if err := os.Chmod(f, 0o644); err != nil {
		t.Fatal(err)
	}
	r := cli(t, "", "backup", f, bak, "--json")
	var b map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &b) != nil || b["held_seconds"] != 0.0 {
		t.Fatalf("backup: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if st, err := os.Stat(bak); err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("the backup: %v, mode %v; want 0644", err, st.Mode().Perm())
	}
	w, err := scaling.Open(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Add([]byte("after"), 2); err != nil {
		t.Fatal(err)
	}
	r = cli(t, "", "restore", bak, f, "--json")
	var res restoreJSON
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || !res.Replaced || res.Schema != "dabloomsctl.restore/v1" {
		t.Fatalf("restore: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if w.Contains([]byte("after")) || !w.Contains([]byte("before")) {
		t.Error("the writer did not move to the restored file")
	}
	w.Close()

	raw, err := os.ReadFile(bak)
	if err != nil {
		t.Fatal(err)
	}
	raw[100] ^= 0xff
	if err := os.WriteFile(bak, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(f)
	if r := cli(t, "", "restore", bak, f); r.code == 0 {
		t.Error("restore of a damaged backup succeeded")
	}
	if after, _ := os.ReadFile(f); string(after) != string(before) {
		t.Error("a refused restore changed the file")
	}
}
