package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestMain lets the test binary serve as the child processes: run starts
// os.Executable(), which under go test is this binary.
func TestMain(m *testing.M) {
	if os.Getenv(envChild) != "" {
		os.Exit(child())
	}
	os.Exit(m.Run())
}

func TestMultiprocess(t *testing.T) {
	var out strings.Builder
	if err := run(&out, config{procs: 3, keys: 2000}); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	s := out.String()
	t.Log("\n" + s)
	for _, want := range []string{
		"phase 1: 3 processes added 6000 keys at once, checking each right after adding it: 6000 checks, 0 lost",
		"phase 3: the parent reopened the file and checked every kept key",
		"= 6000 adds + ",
		"after flush: condition clean",
		"no answer was lost",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if !regexp.MustCompile(`phase 2: 2001 keys removed \(every Remove succeeded\) while every process checked every kept key: \d+ checks, 0 lost`).MatchString(s) {
		t.Error("phase 2 lost answers or is missing")
	}
	if !regexp.MustCompile(`removes by all processes: true`).MatchString(s) {
		t.Error("mem_seqnum does not count every operation")
	}
}
