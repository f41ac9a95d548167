package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportDablooms converts the original's files (the module's
// testdata/dablooms-0.9.1), checks the answers of contains and the exit codes, and
// that the original is left byte-identical.
func TestImportDablooms(t *testing.T) {
	src := filepath.Join("..", "..", "testdata", "dablooms-0.9.1")
	dir := t.TempDir()
	copyIn := func(name string) string {
		in, err := os.Open(filepath.Join(src, name))
		if err != nil {
			t.Fatalf("testdata of dablooms 0.9.1 missing: %v", err)
		}
		defer in.Close()
		p := filepath.Join(dir, name)
		out, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		if _, err := io.Copy(out, in); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := copyIn("scaling_1000_0.05.bin")
	sum := sha(t, old)
	newPath := filepath.Join(dir, "new.dbl")
	r := cli(t, "", "import-dablooms", old, newPath, "--capacity", "1000", "--error-rate", "0.05", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var j importJSON
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
		t.Fatal(err)
	}
	if j.Schema != "dabloomsctl.import/v1" || j.Filters != 3 || j.MemSeqnum != 3001 || j.DiskSeqnum != 3001 || j.State != "clean" || j.Condition != "clean" {
		t.Fatalf("import report %+v", j)
	}
	var keys []string
	for i := 0; i < 2500; i++ {
		if i%5 != 0 {
			keys = append(keys, fmt.Sprint("key-", i))
		}
	}
	r = cli(t, "", append([]string{"contains", newPath}, keys...)...)
	if r.code != 0 || strings.Count(r.stdout, "\ttrue\n") != len(keys) {
		t.Fatalf("contains: exit %d, %d of %d true", r.code, strings.Count(r.stdout, "\ttrue\n"), len(keys))
	}
	if sha(t, old) != sum {
		t.Fatal("the original file changed")
	}
	// Wrong parameters: refused with exit 1, the original untouched, no NEW.
	r = cli(t, "", "import-dablooms", old, filepath.Join(dir, "bad.dbl"), "--capacity", "999", "--error-rate", "0.05")
	if r.code != 1 || !strings.Contains(r.stderr, "implies sizes") {
		t.Fatalf("wrong capacity: exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.dbl")); !os.IsNotExist(err) {
		t.Fatal("a refused import left a file behind")
	}
	// Missing parameters are a usage error.
	if r = cli(t, "", "import-dablooms", old, filepath.Join(dir, "x.dbl")); r.code != 2 {
		t.Fatalf("no --capacity: exit %d", r.code)
	}
	// NEW exists: refused without --force.
	if r = cli(t, "", "import-dablooms", old, newPath, "--capacity", "1000", "--error-rate", "0.05"); r.code != 1 {
		t.Fatalf("existing NEW: exit %d", r.code)
	}
	// The unflushed original (disk_seqnum 0) imports as unflushed: exit 0.
	dup := copyIn("scaling_dupids.bin")
	r = cli(t, "", "import-dablooms", dup, filepath.Join(dir, "dup.dbl"), "--capacity", "100", "--error-rate", "0.1", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"original_state": "unflushed"`) {
		t.Fatalf("dupids: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	// The single counting-filter file.
	cnt := copyIn("counting_1000_0.05.bin")
	r = cli(t, "", "import-dablooms", cnt, filepath.Join(dir, "cnt.dbl"), "--capacity", "1000", "--error-rate", "0.05", "--counting")
	if r.code != 0 {
		t.Fatalf("counting: exit %d: %s", r.code, r.stderr)
	}
	// A counting file has no ids: the summary does not quote the
	// library's stand-in, 2^63-1, as its max_id (the old code did).
	if strings.Contains(r.stderr, "max_id") || !strings.Contains(r.stderr, "(counting file, 1 filter(s), no ids, ") {
		t.Errorf("counting import summary: %q", r.stderr)
	}
}

// A file already in this format is recognised, not measured against the
// original's layout ("file size does not match parameters"), and left
// alone (issue 31).
func TestImportNativeFile(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "native.dbl")
	mustCreate(t, old, "--capacity", "1000", "--error-rate", "0.05")
	sum := sha(t, old)
	newPath := filepath.Join(dir, "new.dbl")
	r := cli(t, "", "import-dablooms", old, newPath, "--capacity", "1000", "--error-rate", "0.05")
	if r.code != 1 || !strings.Contains(r.stderr, "is already a dablooms file of this format") || strings.Contains(r.stderr, "size") {
		t.Errorf("import of a native file: exit %d, %q", r.code, r.stderr)
	}
	if _, err := os.Stat(newPath); !os.IsNotExist(err) {
		t.Errorf("import of a native file wrote %s: %v", newPath, err)
	}
	if sha(t, old) != sum {
		t.Error("import changed the native file")
	}
}
