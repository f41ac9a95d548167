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

// damageSource is the Source of damageBase's keys.
func damageSource(lo, hi uint64, add func([]byte, uint64) error) error {
	for i := 1; i <= 40; i++ {
		if id := uint64(i); id >= lo && id <= hi {
			if err := add(lateKey(i), id); err != nil {
				return err
			}
		}
	}
	return keysSource(damageKeys)(lo, hi, add)
}

// TestIndexStateNoneOverEntries: the late-add index state of the newest
// filter, which holds late Adds, set from allocated to none. Lookups do
// not read it, but Rebuild trusts it: with a counter page of the filter
// damaged too, a Rebuild left the filter's late keys out. Verify now
// reports the word, and Repair and Rebuild take the entries. The negative
// control plans the Rebuild from an analysis that reads the word as it
// is: it loses late keys.
func TestIndexStateNoneOverEntries(t *testing.T) {
	base, err := damageBase()
	if err != nil {
		t.Fatal(err)
	}
	m := metaOf(t, base)
	newest := m.Filters[len(m.Filters)-1]
	if le.Uint64(base[header.FilterLineOffset(newest.Slot)+header.FilterIndexOffset:]) != header.IndexAllocated {
		t.Fatal("fixture: the newest filter has no late-add index")
	}
	img, idx := damageIndexState(t, base, newest.Slot, header.IndexNone)
	out, _, after := repairBytes(t, img)
	if after.State != Clean || le.Uint64(out[idx:]) != header.IndexAllocated {
		dumpReport(t, after)
		t.Fatalf("after Repair: %s, index state %d", after.State, le.Uint64(out[idx:]))
	}

	img[newest.Offset+100] ^= 0x10 // a counter of the filter: it needs Rebuild
	lateLost := func(skipCheck bool) int {
		a, err := analyze(bytesImage(img), parseBootID(testBoot), nil)
		if err != nil {
			t.Fatal(err)
		}
		if skipCheck {
			for i := range a.filters {
				a.filters[i].line.Index = le.Uint64(img[header.FilterLineOffset(a.filters[i].desc.Slot)+header.FilterIndexOffset:])
			}
		}
		p, err := a.plan(bytesImage(img), damageSource)
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.apply(bytesImage(img))
		if err != nil {
			t.Fatal(err)
		}
		f, err := openRegion(byteRegion{alignedCopy(out)}, booted(&scaling.OpenOptions{ReadOnly: true}, testBoot))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		lost := 0
		for i := 1; i <= 40; i++ {
			if !f.Contains(lateKey(i)) {
				lost++
			}
		}
		return lost
	}
	if n := lateLost(false); n != 0 {
		t.Fatalf("Rebuild lost %d of 40 late keys", n)
	}
	if n := lateLost(true); n == 0 {
		t.Fatal("negative control: a Rebuild trusting the damaged state kept every late key")
	} else {
		t.Logf("negative control: a Rebuild trusting the damaged state loses %d of 40 late keys", n)
	}
}

// TestIndexStateAllocatedWithoutIndex: the late-add index state of a filter
// that has no index, set to allocated (CI's fuzzer found it). Repair
// lowered it to none and then raised it again, taking it for a state
// checkIndexState had read as none over entries: the file never came out
// clean. Checked: the old fixFields fails it.
func TestIndexStateAllocatedWithoutIndex(t *testing.T) {
	base, err := fuzzBase()
	if err != nil {
		t.Fatal(err)
	}
	m := metaOf(t, base)
	d := m.Filters[0]
	if d.IndexBytes() != 0 {
		t.Fatal("fixture: filter 0 has a late-add index")
	}
	img, idx := damageIndexState(t, base, d.Slot, header.IndexAllocated)
	for _, src := range []Source{nil, fuzzSource} {
		out, _, after := repairWith(t, img, src)
		if after.State != Clean || le.Uint64(out[idx:]) != header.IndexNone {
			dumpReport(t, after)
			t.Fatalf("after Repair (source %v): %s, index state %d", src != nil, after.State, le.Uint64(out[idx:]))
		}
	}
}

// damageIndexState returns a copy of base with the late-add index state
// of the filter in directory entry slot set to v, and the state's offset,
// after checking that Verify reports the word damaged.
func damageIndexState(t *testing.T, base []byte, slot int, v uint64) ([]byte, int64) {
	t.Helper()
	idx := header.FilterLineOffset(slot) + header.FilterIndexOffset
	img := alignedCopy(base)
	le.PutUint64(img[idx:], v)
	if _, rep := verifyBytes(t, img); rep.State != Damaged || !hasFinding(rep, "late-add index", slot) {
		dumpReport(t, rep)
		t.Fatalf("Verify: %s, want damaged at the index state", rep.State)
	}
	return img, idx
}
