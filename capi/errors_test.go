//go:build cgo

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dablooms/dablooms/mmapfile"
	"github.com/dablooms/dablooms/scaling"
)

// TestMessages: the error texts of the C API and pydablooms say what
// happened in words, with none of the packages' prefixes, and name the
// file once. The errors are the library's own where a test can provoke
// them, and built as the library wraps them otherwise.
func TestMessages(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.dbl")
	f, err := scaling.Create(path, &scaling.Options{Capacity: 100, ErrorRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	garbage := filepath.Join(dir, "garbage.bin")
	if err := os.WriteFile(garbage, []byte("hello world"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.dbl")
	counting, err := createStore(filepath.Join(dir, "c.dbl"), 2, 0.01, kindCounting)
	if err != nil {
		t.Fatal(err)
	}
	defer counting.Close()
	var full error
	for i := 0; full == nil && i < 10; i++ {
		full = counting.AddString(fmt.Sprint("k", i), 0)
	}

	openErr := func(p string) error {
		_, _, err := openStore(p, 1000, 0.01, kindScaling)
		return err
	}
	_, busy := createStore(path, 100, 0.01, kindScaling)
	_, exists := scaling.Create(path, &scaling.Options{Capacity: 100, ErrorRate: 0.01})
	for _, c := range []struct {
		name string
		err  error
		path string
		k    kind
		want []string
	}{
		{"busy", busy, path, kindScaling, []string{"is open in another handle or process; close it first"}},
		{"exists", exists, path, kindScaling, []string{"already exists"}},
		{"missing", openErr(missing), missing, kindScaling, []string{"does not exist"}},
		{"directory", openErr(dir), dir, kindScaling, []string{"is a directory"}},
		{"not dablooms", openErr(garbage), garbage, kindScaling, []string{"is not a dablooms file", "0.9.1", "capacity 1000", "size"}},
		{"lock timeout", fmt.Errorf("flush lock: %w", fmt.Errorf("%w: %s at byte %d after %v", mmapfile.ErrLockTimeout, path, 8192, time.Second)),
			path, kindScaling, []string{"gave up waiting", "lock"}},
		{"unclean", &scaling.StateError{Condition: scaling.Interrupted, Detail: "1 operation(s) of dead writers were cut short"},
			path, kindScaling, []string{"cannot be trusted", "interrupted", "cut short", "dabloomsctl repair"}},
		{"corrupt", fmt.Errorf("open %s: %w", path, &scaling.CorruptionError{Offset: 64, Filter: -1, Field: "magic", Reason: "got \"hello\"", Err: scaling.ErrCorrupt}),
			path, kindScaling, []string{"is damaged", "magic", "offset 64"}},
		{"counting full", full, path, kindCounting, []string{"counting filter is full"}},
		{"not present", f.RemoveString("absent", 1), path, kindScaling, []string{"not present in the filter for this id"}},
		{"invalid id", f.AddString("k", 1<<63), path, kindScaling, []string{"invalid id", "9223372036854775808"}},
		{"other", fmt.Errorf("dablooms: something new: %w", errors.New("mmapfile: deep")), path, kindScaling, []string{"something new: deep (" + path + ")"}},
	} {
		if c.err == nil {
			t.Errorf("%s: no error to describe", c.name)
			continue
		}
		m := message(c.err, c.path, c.k)
		for _, w := range c.want {
			if !strings.Contains(m, w) {
				t.Errorf("%s: %q does not say %q (from %q)", c.name, m, w, c.err)
			}
		}
		for _, internal := range []string{"dablooms: ", "mmapfile", "legacy: ", "%!"} {
			if strings.Contains(m, internal) {
				t.Errorf("%s: %q shows %q (from %q)", c.name, m, internal, c.err)
			}
		}
		switch n := strings.Count(m, c.path); {
		case strings.Contains(m, "dabloomsctl verify") && n == 2:
			// the command to run names it again
		case c.k == kindCounting || c.name == "not present" || c.name == "invalid id":
			if n > 1 {
				t.Errorf("%s: %q names the file %d times", c.name, m, n)
			}
		case n != 1:
			t.Errorf("%s: %q names the file %d times, want once", c.name, m, n)
		}
	}
}
