package recover

import (
	"errors"
	"testing"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/scaling"
)

// worstWithout is the state of r without the findings skip selects: what
// a Verify that does not make that check reports.
func worstWithout(r *Report, skip func(Finding) bool) State {
	s := Clean
	for _, f := range r.Findings {
		if !skip(f) {
			s = max(s, f.State)
		}
	}
	return s
}

// liveFalseNegatives opens img read-only, applies mutate to the bytes
// under the handle (as damage to a word other processes read live, like
// the hot page's) and counts the keys 1..n it then rules out.
func liveFalseNegatives(t *testing.T, img []byte, n int, mutate func([]byte)) int {
	t.Helper()
	b := make([]byte, len(img)) // 8-byte aligned
	copy(b, img)
	f, err := openRegion(byteRegion{b}, booted(&scaling.OpenOptions{ReadOnly: true}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mutate(b)
	lost := 0
	for i := 1; i <= n; i++ {
		if !f.Contains(key(i)) {
			lost++
		}
	}
	return lost
}

// retiredFinding reports whether f is the finding of a retired word
// ahead of the directory in a file marked clean (retiredAheadWhenClean).
func retiredFinding(f Finding) bool {
	return f.Field == "retired" && f.Offset == header.RetiredOffset && f.State == Damaged
}

// TestRetiredWordWhenClean (issue 38 item 2): the hot retired word raised
// from 0 to 1 in a clean, closed file made every process skip filter 0
// (its keys answered false) while Verify said clean, with a note about a
// retirement cut short that the next read-write Open or Repair made
// permanent. Now Verify reports damage there, Open refuses the file, and
// Repair sets the word back: every key answers again. The negative
// control is the Verify without the check: it says clean, while a handle
// that had the file open loses the keys of filter 0.
func TestRetiredWordWhenClean(t *testing.T) {
	const n = 2000
	path := newFile(t, 1000, counting4.Blocked1024, n)
	clean := mustReadFile(t, path)
	if m := readMetaT(t, path); len(m.Filters) < 2 || m.Retired != 0 {
		t.Fatalf("fixture: %d filters, %d retired", len(m.Filters), m.Retired)
	}
	putWord(t, path, header.RetiredOffset, 1)
	sum := sum256(t, path)

	rep := verifyT(t, path)
	if rep.State != Damaged || !hasFinding(rep, "retired", -1) {
		dumpReport(t, rep)
		t.Fatalf("Verify: %s, want damaged at the retired word", rep.State)
	}
	// The negative control: without the check Verify says the file is
	// fine, and a reader loses filter 0's keys.
	if s := worstWithout(rep, retiredFinding); s > Unflushed {
		dumpReport(t, rep)
		t.Fatalf("without the check Verify says %s: the fixture does not show the bug", s)
	}
	lost := liveFalseNegatives(t, clean, n, func(b []byte) { le.PutUint64(b[header.RetiredOffset:], 1) })
	if lost < 500 {
		t.Fatalf("the raised word hides only %d keys: the fixture does not show the bug", lost)
	}
	t.Logf("the raised word hides %d of %d keys from a reader; Verify: %s", lost, n, rep.State)

	for _, ro := range []bool{true, false} {
		_, err := scaling.Open(path, booted(&scaling.OpenOptions{ReadOnly: ro}, testBoot))
		var ce *header.CorruptionError
		if !errors.As(err, &ce) || ce.Offset != header.RetiredOffset {
			t.Fatalf("Open (read-only %v): %v, want a CorruptionError at the retired word", ro, err)
		}
	}
	if sum256(t, path) != sum {
		t.Fatal("a refused Open changed the file")
	}
	got, err := Repair(path, booted(&RepairOptions{}, testBoot))
	if err != nil || got.State != Clean {
		t.Fatalf("Repair: %v, %v", got, err)
	}
	if m := readMetaT(t, path); m.Retired != 0 || wordAt(t, path, header.RetiredOffset) != 0 {
		t.Fatalf("after Repair: %d retired in the directory, word %d", m.Retired, wordAt(t, path, header.RetiredOffset))
	}
	if fn, err := falseNegatives(mustReadFile(t, path), testBoot, keySet(n)); err != nil || fn != 0 {
		t.Fatalf("after Repair: %d false negatives (%v)", fn, err)
	}
}

// keySet is the set of key numbers 1..n.
func keySet(n int) map[int]bool {
	m := make(map[int]bool, n)
	for i := 1; i <= n; i++ {
		m[i] = true
	}
	return m
}
