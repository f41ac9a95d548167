package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/dablooms/dablooms/header"
)

// TestUpgradeOldFile: upgrade rewrites a file of an older format (the
// version 1.0 fixture) as the current one, with page checksums, which
// verify then checks clean; a second upgrade leaves it as it is.
func TestUpgradeOldFile(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "scaling", "testdata", "v10-minor0.dbl"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "old.dbl")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	minor := func() float64 {
		t.Helper()
		r := cli(t, "", "inspect", path, "--json")
		if r.code != 0 {
			t.Fatalf("inspect: exit %d: %s", r.code, r.stderr)
		}
		var doc struct {
			Format struct{ Minor *float64 }
		}
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Format.Minor == nil {
			t.Fatalf("inspect --json has no format.minor: %s", r.stdout)
		}
		return *doc.Format.Minor
	}
	if v := minor(); v >= 4 {
		t.Fatalf("the fixture is already of minor version %v", v)
	}
	if r := cli(t, "", "upgrade", path, "--no-backup"); r.code != 0 {
		t.Fatalf("upgrade: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if v := minor(); v != header.VersionMinor {
		t.Fatalf("after upgrade the minor version is %v, want %d", v, header.VersionMinor)
	}
	if r := cli(t, "", "verify", path); r.code != 0 {
		t.Fatalf("verify after upgrade: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	before, _ := os.ReadFile(path)
	if r := cli(t, "", "upgrade", path, "--no-backup"); r.code != 0 {
		t.Fatalf("second upgrade: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("a second upgrade changed the file")
	}
}
