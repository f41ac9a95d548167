package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// What people expect of a CLI (issue 31): "did you mean", completion of
// commands and flag values, contains' exit status for scripts.
func TestDidYouMean(t *testing.T) {
	r := cli(t, "", "inpsect", "x.dbl")
	if r.code != 2 || !strings.Contains(r.stderr, `unknown command "inpsect"; did you mean inspect?`) {
		t.Errorf("mistyped command: exit %d, %q", r.code, r.stderr)
	}
	r = cli(t, "", "frobnicate")
	if r.code != 2 || strings.Contains(r.stderr, "did you mean") {
		t.Errorf("unknown command: exit %d, %q", r.code, r.stderr)
	}
}

func TestCompletion(t *testing.T) {
	r := cli(t, "", "completion", "bash")
	if r.code != 0 || !strings.Contains(r.stdout, "__start_dabloomsctl") {
		t.Errorf("completion bash: exit %d, %.200q", r.code, r.stdout)
	}
	if r := cli(t, "", "--help"); !strings.Contains(r.stdout, "completion") {
		t.Errorf("--help does not show completion:\n%s", r.stdout)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "create", "x.dbl", "--layout", ""}, "blocked1024\nblocked512\nclassic\n"},
		{[]string{"__complete", "add", "x.dbl", "--progress", ""}, "auto\nalways\nnever\n"},
		{[]string{"__complete", "ins"}, "inspect\t"},
	} {
		r := cli(t, "", c.args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, c.want) {
			t.Errorf("%v: exit %d, %q; want it to start with %q", c.args, r.code, r.stdout, c.want)
		}
	}
}

func TestContainsExitCode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.dbl")
	mustCreate(t, path, "--capacity", "1000", "--error-rate", "0.001")
	if r := cli(t, "", "add", path, "a", "b", "-q"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	for _, c := range []struct {
		keys []string
		code int
	}{
		{[]string{"a", "b"}, 0},
		{[]string{"a", "absent-key"}, 1},
	} {
		r := cli(t, "", append([]string{"contains", path, "--exit-code"}, c.keys...)...)
		if r.code != c.code || r.stderr != "" || strings.Count(r.stdout, "\n") != len(c.keys) {
			t.Errorf("contains --exit-code %v: exit %d, stdout %q, stderr %q; want exit %d", c.keys, r.code, r.stdout, r.stderr, c.code)
		}
	}
	// An error is never taken for "absent" (grep's convention): a missing
	// store, a file that is not one and a bad --from line exit 2, with a
	// message and no pointer to --help. (The old code exited 1 for each.)
	junk := filepath.Join(filepath.Dir(path), "junk")
	bad := filepath.Join(filepath.Dir(path), "bad.txt")
	writeLines(t, junk, []string{"not a dablooms file"})
	writeLines(t, bad, []string{"a", "b\tnot-an-id"})
	for _, args := range [][]string{
		{filepath.Join(filepath.Dir(path), "missing.dbl"), "a"},
		{junk, "a"},
		{path, "--from", bad},
	} {
		r := cli(t, "", append([]string{"contains", "--exit-code"}, args...)...)
		if r.code != 2 || !strings.HasPrefix(r.stderr, "dabloomsctl: ") || strings.Contains(r.stderr, "--help") {
			t.Errorf("contains --exit-code %v: exit %d, stderr %q; want exit 2 and the error", args, r.code, r.stderr)
		}
		// Without --exit-code the same errors keep their code, 1.
		if r := cli(t, "", append([]string{"contains"}, args...)...); r.code != 1 {
			t.Errorf("contains %v: exit %d, want 1", args, r.code)
		}
	}
	// A usage error stays one.
	if r := cli(t, "", "contains", path, "--exit-code"); r.code != 2 || !strings.Contains(r.stderr, "--help") {
		t.Errorf("contains --exit-code without keys: exit %d, %q", r.code, r.stderr)
	}
	// Without it, an absent key is an answer, not a failure.
	if r := cli(t, "", "contains", path, "absent-key"); r.code != 0 {
		t.Errorf("contains of an absent key: exit %d", r.code)
	}
}

// repair --no-backup keeps no copy of the original, a fixed --backup is
// reused rather than adding .bak.N, and -q prints only the summary
// (issue 31: every in-place repair left another full-size .bak).
func TestRepairBackups(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.dbl")
	mustCreate(t, path, "--capacity", "1000", "--error-rate", "0.01")
	unflush := func() {
		t.Helper()
		if r := cli(t, "", "add", path, "k", "--no-flush", "-q"); r.code != 0 {
			t.Fatal(r.stderr)
		}
	}
	unflush()
	r := cli(t, "", "repair", path, "--no-backup", "-q")
	if r.code != 0 || strings.Contains(r.stdout, "action:") || !strings.Contains(r.stdout, "repaired "+path+": clean") ||
		!strings.Contains(r.stdout, "no backup was kept") {
		t.Errorf("repair --no-backup -q: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Without -q it says so, and it kept nothing, not even for a moment
	// under another name.
	unflush()
	r = cli(t, "", "repair", path, "--no-backup")
	if r.code != 0 || !strings.Contains(r.stdout, "action: kept no backup of the original\n") || strings.Contains(r.stdout, "removed") {
		t.Errorf("repair --no-backup: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for i := 0; i < 2; i++ {
		unflush()
		if r := cli(t, "", "repair", path, "--backup", path+".bak", "-q"); r.code != 0 {
			t.Fatalf("repair --backup: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	}
	if names := dirEntries(t, dir); strings.Join(names, " ") != "r.dbl r.dbl.bak" {
		t.Errorf("files after three repairs: %v; want r.dbl r.dbl.bak", names)
	}
	if r := cli(t, "", "repair", path, "--no-backup", "--backup", "x"); r.code != 2 {
		t.Errorf("--no-backup with --backup: exit %d", r.code)
	}
}
