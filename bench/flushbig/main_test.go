package main

import (
	"strings"
	"testing"
)

// TestRun loads a small store and flushes it after changes: the program
// runs and reports every field.
func TestRun(t *testing.T) {
	out := run(20000, 1000, 2, t.TempDir())
	for _, want := range []string{"n=20000", "file=", "load=", "flush after 1000 changes: median"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output %q lacks %q", out, want)
		}
	}
}
