package scaling_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/recover"
	"github.com/dablooms/dablooms/scaling"
)

// A Flush killed at any of its steps, followed by anything the documents
// allow (go on writing and flushing, another Flush, Repair, Backup), leaves
// a file that verifies clean without a Rebuild (issue 38; docs/PROTOCOLS.md,
// I3). Knobs.FlushStep stops a flush at its n-th step with
// runtime.Goexit, which lets its locks go as a killed process's are and
// leaves the file as the kill would (the mapping is shared: every store
// made before the kill is in it).

// flushKillKeys are the keys added before the killed flush: they change
// most pages of the file's one filter.
const flushKillKeys = 3000

func flushKillKey(i int) []byte { return fmt.Appendf(nil, "flush kill %d", i) }

// flushKillTrial creates path, adds flushKillKeys keys through a handle
// whose Flush stops at its step kill (its k-th FlushStep call, from 0),
// then runs after and adds and flushes one more key through another
// handle. It returns the step the flush stopped at ("" if it has fewer
// steps: it finished) and what Verify then finds wrong.
func flushKillTrial(t *testing.T, path string, kill int, after string, k testknobs.Knobs) (string, []string) {
	t.Helper()
	c, err := scaling.Create(path, &scaling.Options{Capacity: 20000, ErrorRate: 0.01, Seed: 38, Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	n, stopped := 0, ""
	k.FlushStep = func(step string) {
		if n++; n-1 == kill {
			stopped = step
			runtime.Goexit()
		}
	}
	o := &scaling.OpenOptions{}
	testknobs.Set(o, &k)
	a, err := scaling.Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range flushKillKeys {
		if err := a.Add(flushKillKey(i), uint64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() {
		defer close(done)
		done <- a.Flush()
	}()
	if err, ok := <-done; ok && err != nil {
		t.Fatalf("the flush: %v", err)
	}
	if err := a.Close(); err != nil { // (Close syncs nothing, flushes nothing)
		t.Fatal(err)
	}
	if stopped == "" {
		return "", nil
	}
	var bad []string
	switch after {
	case "write":
	case "flush", "flush-no-takeover":
		// A flush after the kill marks the file clean: it takes the
		// killed flush over (but with Knobs.FlushNoTakeOver).
		o := &scaling.OpenOptions{}
		testknobs.Set(o, &testknobs.Knobs{FlushNoTakeOver: after == "flush-no-takeover"})
		g, err := scaling.Open(path, o)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
		if r, err := recover.Verify(path); err != nil || r.State != recover.Clean || r.Phase != "clean" {
			bad = append(bad, fmt.Sprintf("a flush after the kill left the file %v in phase %s (Verify: %v)", r.State, r.Phase, err))
		}
	case "repair":
		rep, err := recover.Repair(path, &recover.RepairOptions{NoBackup: true})
		if err != nil {
			bad = append(bad, fmt.Sprintf("Repair: %v", err))
			break
		}
		// A kill inside the take left the taking word: Repair names the
		// cause, a killed flush, and no restart.
		acts := strings.Join(rep.Actions, "; ")
		if inTake := stopped == "recorded" || stopped == "swapped" || stopped == "stored"; inTake != strings.Contains(acts, "a flush killed while it took page checksums") || strings.Contains(acts, "restart") {
			bad = append(bad, fmt.Sprintf("Repair after a kill at %s: actions %q", stopped, rep.Actions))
		}
	case "backup":
		dst := path + ".backup"
		if _, err := recover.Backup(context.Background(), path, dst, &recover.BackupOptions{Overwrite: true}); err != nil {
			bad = append(bad, fmt.Sprintf("Backup: %v", err))
		} else {
			bad = append(bad, flushKillFindings(t, dst, "the backup", flushKillKey, flushKillKeys)...)
		}
	default:
		t.Fatalf("after %q", after)
	}
	flushKillWrite(t, path, "one more", flushKillKeys+1)
	return stopped, append(bad, flushKillFindings(t, path, "the file", flushKillKey, flushKillKeys)...)
}

// flushKillWrite opens path, adds key with id (none if id is 0), flushes
// and closes.
func flushKillWrite(t *testing.T, path, key string, id uint64) {
	t.Helper()
	f, err := scaling.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if id != 0 {
		if err := f.Add([]byte(key), id); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// flushKillFindings returns what Verify finds wrong with path: a state but
// clean, any finding worse than a note, a key added (key(i), i < n) and not
// found.
func flushKillFindings(t *testing.T, path, what string, key func(int) []byte, n int) []string {
	t.Helper()
	r, err := recover.Verify(path)
	if err != nil {
		return []string{fmt.Sprintf("%s: Verify: %v", what, err)}
	}
	var bad []string
	if r.State != recover.Clean {
		bad = append(bad, fmt.Sprintf("%s is %s", what, r.State))
	}
	for _, f := range r.Findings {
		if f.State > recover.Clean {
			bad = append(bad, fmt.Sprintf("%s: %s: %s (offset %d): %s", what, f.State, f.Field, f.Offset, f.Message))
		}
	}
	f, err := scaling.Open(path, &scaling.OpenOptions{ReadOnly: true})
	if err != nil {
		return append(bad, fmt.Sprintf("%s: Open: %v", what, err))
	}
	defer f.Close()
	for i := range n {
		if !f.Contains(key(i)) {
			bad = append(bad, fmt.Sprintf("%s: key %d lost", what, i))
			break
		}
	}
	return bad
}

// TestFlushKilledAtEachStep kills a Flush at each of its steps and goes on
// in each of the ways the documents allow; every file must then verify
// clean. The steps inside the take of the page checksums (recorded,
// swapped, stored: one per page) are most of them.
func TestFlushKilledAtEachStep(t *testing.T) {
	requireLinux(t)
	dir := t.TempDir()
	for _, after := range []string{"write", "flush", "repair", "backup"} {
		t.Run(after, func(t *testing.T) {
			steps := map[string]int{}
			for kill := 0; ; kill++ {
				step, bad := flushKillTrial(t, filepath.Join(dir, after+".dbl"), kill, after, testknobs.Knobs{})
				if step == "" {
					break
				}
				steps[step]++
				if len(bad) > 0 {
					t.Errorf("flush killed at step %d (%s), then %s:\n%s", kill, step, after, strings.Join(bad, "\n"))
				}
			}
			if steps["stored"] < 10 || steps["swapped"] < 3 || steps["recorded"] < 1 || steps["ended"] != 1 {
				t.Fatalf("steps %v: the flush took too few checksums to test", steps)
			}
			t.Logf("steps killed at: %v", steps)
		})
	}
}

// TestFlushKilledAtEachStepControl holds the negative controls: with the
// take of the page checksums as it was before the hot taking word
// (Knobs.FlushTakeUnrecorded), a flush killed between a map word's swap
// and its checksums' stores must leave the file damaged after the next
// write and flush; and a flush that does not take a killed flush over
// (Knobs.FlushNoTakeOver) must leave the file unflushed.
func TestFlushKilledAtEachStepControl(t *testing.T) {
	requireLinux(t)
	for _, c := range []struct {
		name, after string
		k           testknobs.Knobs
	}{
		{"take", "write", testknobs.Knobs{FlushTakeUnrecorded: true}},
		{"takeover", "flush-no-takeover", testknobs.Knobs{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "control.dbl")
			failed, trials := 0, 0
			for kill := 0; ; kill++ {
				step, bad := flushKillTrial(t, path, kill, c.after, c.k)
				if step == "" {
					break
				}
				trials++
				if len(bad) > 0 {
					if failed == 0 {
						t.Logf("killed at step %d (%s): %s", kill, step, bad[0])
					}
					failed++
				}
			}
			if failed == 0 {
				t.Fatalf("no file of %d found wrong with the control on: the test cannot see what it breaks", trials)
			}
			t.Logf("%d of %d kills found wrong", failed, trials)
		})
	}
}

func requireLinux(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("file-backed store: dablooms files need Linux")
	}
}

// TestOpenNamesTheCause: Open's StateError for a dirty file says why it
// cannot be trusted: a restart only when the recorded boot identity is
// another machine boot's, not when Repair recorded that it left filters
// needing Rebuild, nor when none was recorded (issue 38, item 1: after a
// killed flush, Open said the machine had restarted).
func TestOpenNamesTheCause(t *testing.T) {
	requireLinux(t)
	path := filepath.Join(t.TempDir(), "cause.dbl")
	f, err := scaling.Create(path, &scaling.Options{Capacity: 1000, ErrorRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Add([]byte("k"), 1); err != nil { // dirty, unflushed
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	other := header.ParseBootID("another boot")
	for _, c := range []struct {
		boot      [16]byte
		want, not string
	}{
		{header.RebuildBootID, "a Repair left filters it could not make exact", "restart"},
		{[16]byte{}, "no boot identity was recorded", "restart"},
		{other, "the machine has restarted since", "Repair"},
	} {
		w, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = w.WriteAt(c.boot[:], header.BootIDOffset)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		g, err := scaling.Open(path, nil)
		var se *scaling.StateError
		if !errors.As(err, &se) || se.Condition != scaling.Dirty || !strings.Contains(se.Detail, c.want) || strings.Contains(se.Detail, c.not) {
			t.Errorf("boot id %q: Open: %v; want Dirty saying %q, not %q", c.boot, err, c.want, c.not)
		}
		if g != nil {
			g.Close()
		}
	}
}
