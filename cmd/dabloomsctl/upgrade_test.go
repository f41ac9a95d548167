package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dablooms/dablooms/header"
)

// oldFixture copies the format 1.0 fixture of package scaling into a
// temporary directory and returns the copy's path.
func oldFixture(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "scaling", "testdata", "v10-minor0.dbl"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "old.dbl")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestUpgradeOldFile: upgrade rewrites a file of an older format (the
// version 1.0 fixture) as the current one, with page checksums, which
// verify then checks clean; a second upgrade leaves it as it is.
func TestUpgradeOldFile(t *testing.T) {
	path := oldFixture(t)
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

// A file of an older format whose filters need rebuilding is refused
// with what to run first; the old code said its two metadata copies were
// both unusable, explain's words for the same sentinel.
func TestUpgradeNeedsRebuild(t *testing.T) {
	path := oldFixture(t)
	// Unflushed on "another boot": dirty.
	if r := cli(t, "", "add", path, "k", "--id", "1", "--no-flush", "--boot-id", "other", "-q"); r.code != 0 {
		t.Fatalf("add: exit %d: %s", r.code, r.stderr)
	}
	r := cli(t, "", "upgrade", path)
	if r.code != 1 || !strings.Contains(r.stderr, path+" cannot be upgraded yet: filters [0] need 'repair --rebuild-from' before") ||
		strings.Contains(r.stderr, "metadata copies") || libraryWords.MatchString(r.stdout+r.stderr) {
		t.Errorf("upgrade of a dirty old file: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
