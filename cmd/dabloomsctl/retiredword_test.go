package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dablooms/dablooms/header"
)

// TestVerifyRetiredWordWhenClean (issue 38 item 2): the hot retired word
// set from 0 to 1 in a clean, closed file hid filter 0's keys while
// verify exited 0. verify now exits with the damaged code (3) and names
// the word, contains refuses the file rather than answer false, and repair
// brings every key back.
func TestVerifyRetiredWordWhenClean(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.dbl")
	if r := cli(t, "", "create", path, "--capacity", "1000", "--error-rate", "0.01", "-q"); r.code != 0 {
		t.Fatalf("create: %d %s", r.code, r.stderr)
	}
	var in strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&in, "k%d\t%d\n", i, i)
	}
	if r := cli(t, in.String(), "add", path, "--from", "-", "-q"); r.code != 0 {
		t.Fatalf("add: %d %s", r.code, r.stderr)
	}
	if r := cli(t, "", "verify", path); r.code != 0 {
		t.Fatalf("verify of the clean file: %d %s", r.code, r.stderr)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint64(b[header.RetiredOffset:], 1)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r := cli(t, "", "verify", path)
	if r.code != exitUnclean || !strings.Contains(r.stdout+r.stderr, "retired") {
		t.Fatalf("verify of the damaged file: exit %d, want %d naming the retired word\n%s%s", r.code, exitUnclean, r.stdout, r.stderr)
	}
	if r := cli(t, "", "contains", path, "k1"); r.code == 0 {
		t.Fatalf("contains answered from the damaged file: %s", r.stdout)
	}
	if r := cli(t, "", "repair", path, "-q"); r.code != 0 {
		t.Fatalf("repair: %d %s", r.code, r.stderr)
	}
	if r := cli(t, "", "verify", path); r.code != 0 {
		t.Fatalf("verify after repair: %d %s%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, "", "contains", path, "k1", "k500", "k999", "k2000")
	if r.code != 0 || strings.Count(r.stdout, "true") != 4 {
		t.Fatalf("contains after repair: %d %q %s", r.code, r.stdout, r.stderr)
	}
}
