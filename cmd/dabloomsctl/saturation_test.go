package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dablooms/dablooms/header"
)

// TestVerifySaturatedPage: a 4 KiB page of 0xFF over the counters of a
// filter 25% full (issue 29) makes verify exit 3, naming the filter, with
// advice (repair --rebuild-from) that leaves the file verifying clean.
// Before the plausibility test of saturated counters, verify said "clean".
func TestVerifySaturatedPage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.dbl")
	keys := filepath.Join(dir, "keys.tsv")
	var lines strings.Builder
	for i := 1; i <= 10000; i++ {
		fmt.Fprintf(&lines, "key-%d\t%d\n", i, i)
	}
	if err := os.WriteFile(keys, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := cli(t, "", "create", path, "--capacity", "40000", "--error-rate", "0.01", "-q"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := cli(t, "", "add", path, "--from", keys, "-q"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := cli(t, "", "flush", path); r.code != 0 {
		t.Fatal(r.stderr)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	page := int64(header.DataOffset + 3*header.PageSize)
	_, err = f.WriteAt(bytes.Repeat([]byte{0xff}, header.PageSize), page)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	r := cli(t, "", "verify", path)
	if r.code != 3 || !strings.Contains(r.stdout, "damaged: counters (filter 0, offset ") || !strings.Contains(r.stdout, "--rebuild-from") {
		t.Fatalf("verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := cli(t, "", "repair", path, "--rebuild-from", keys, "--no-backup"); r.code != 0 {
		t.Fatalf("repair --rebuild-from: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := cli(t, "", "verify", path); r.code != 0 || strings.Contains(r.stdout, "saturated") {
		t.Fatalf("verify after the rebuild: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
