package recover

import (
	"errors"
	"os"
	"testing"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/scaling"
)

// interruptedFile makes a store whose writer (on this boot) died in the
// middle of adding key 1000: its slot 5 holds the half-done operation.
// claim, hash, evidence (word, new), doubt, CAS, changed: after 7 stores
// the first group is in.
func interruptedFile(t *testing.T) string { return interruptedAfter(t, 7) }

// interruptedAfter is interruptedFile with the writer killed after budget
// stores of its Add.
func interruptedAfter(t *testing.T, budget int) string {
	t.Helper()
	path := newFile(t, 1000, counting4.Blocked512, 300)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := header.Pick(b[:2*header.MetaSize], int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	markWriting(b)
	simRun(newSimImage(b), m.Filters[0], m.Params.Seed, simOp{add: true, key: key(1000), slot: 5, rec: 3}, budget)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOpenNeverRepairs: Open refuses an interrupted file and a dirty one
// with a *StateError and writes nothing (not even a writer slot): the
// evidence stays as it was; with AllowUnclean it opens and reports the
// condition. Repair then makes it clean.
func TestOpenNeverRepairs(t *testing.T) {
	path := interruptedFile(t)
	before := sum256(t, path)
	if r := verifyT(t, path); r.State != Interrupted {
		dumpReport(t, r)
		t.Fatalf("verify: %s", r.State)
	}
	for _, tc := range []struct {
		boot string
		want scaling.Condition
	}{{testBoot, scaling.Interrupted}, {"another-boot", scaling.Dirty}} {
		_, err := scaling.Open(path, booted(&scaling.OpenOptions{}, tc.boot))
		var se *scaling.StateError
		if !errors.As(err, &se) || se.Condition != tc.want || !errors.Is(err, scaling.ErrUnclean) {
			t.Fatalf("Open (boot %s): %v, want a StateError %v", tc.boot, err, tc.want)
		}
		if sum256(t, path) != before {
			t.Fatalf("a refused Open (boot %s) changed the file", tc.boot)
		}
		f, err := scaling.Open(path, booted(&scaling.OpenOptions{AllowUnclean: true, ReadOnly: true}, tc.boot))
		if err != nil {
			t.Fatal(err)
		}
		if c := f.Condition(); c != tc.want {
			t.Fatalf("Condition %v, want %v", c, tc.want)
		}
		f.Close()
		if sum256(t, path) != before {
			t.Fatal("a read-only Open changed the file")
		}
	}
	if r := verifyT(t, path); r.State != Interrupted {
		t.Fatalf("after the refused opens, verify says %s", r.State)
	}
	rep, err := Repair(path, booted(&RepairOptions{}, testBoot))
	if err != nil || rep.State != Clean {
		t.Fatalf("Repair: %v, %v", err, rep)
	}
	f, err := scaling.Open(path, booted(&scaling.OpenOptions{}, testBoot))
	if err != nil {
		t.Fatalf("Open after Repair: %v", err)
	}
	defer f.Close()
	for i := 1; i <= 300; i++ {
		if !f.Contains(key(i)) {
			t.Fatalf("key %d lost", i)
		}
	}
}
