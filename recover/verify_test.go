package recover

import (
	"errors"
	"os"
	"testing"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/scaling"
)

// flipByte inverts the byte at off of the file at path.
func flipByte(t testing.TB, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err == nil {
		b[off] ^= 0xff
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestOneBadCopyMagicIsDamage: a file whose metadata copy A has a bad magic
// (copy B is whole) is a damaged dablooms file, and its report's error says
// so, not "not a dablooms file" (issue 11, item 8).
func TestOneBadCopyMagicIsDamage(t *testing.T) {
	for _, off := range []int64{header.MetaAOffset, header.MetaBOffset} { // the magic of copy A, of copy B
		path := newFile(t, 100, counting4.Blocked512, 10)
		flipByte(t, path, off)
		r := verifyT(t, path)
		err := r.Err()
		if r.State != Damaged || errors.Is(err, header.ErrNotDablooms) || errors.Is(err, header.ErrVersion) || !errors.Is(err, header.ErrCorrupt) {
			dumpReport(t, r)
			t.Errorf("byte %d flipped: state %v, Err %v; want damaged, ErrCorrupt", off, r.State, err)
		}
	}
}

// putWord writes v at off of the file at path.
func putWord(t testing.TB, path string, off int64, v uint64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err == nil {
		le.PutUint64(b[off:], v)
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func wordAt(t testing.TB, path string, off int64) uint64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return le.Uint64(b[off:])
}

// TestPendingAddsHint: word +32 of a filter line is the pending-adds hint
// (FORMAT.md): any value is valid, Repair and Rebuild write it as 0; the
// words after it are still reserved (issue 11, item 6a).
func TestPendingAddsHint(t *testing.T) {
	line := header.FilterLineOffset(0)
	pending := line + header.FilterPendingOffset

	path := newFile(t, 100, counting4.Blocked512, 10)
	putWord(t, path, pending, 0xdead_beef_0000_0001)
	r := verifyT(t, path)
	if r.State != Clean {
		dumpReport(t, r)
		t.Fatalf("a pending-adds hint: state %v, want clean", r.State)
	}
	rep, err := Repair(path, booted(&RepairOptions{}, testBoot))
	if err != nil || rep.State != Clean || wordAt(t, path, pending) != 0 {
		t.Fatalf("Repair: %v, %v, pending word %#x after", err, rep, wordAt(t, path, pending))
	}

	// A reserved word after it is garbage: the line needs Rebuild, which
	// writes the pending word as 0 too.
	putWord(t, path, pending, 7)
	putWord(t, path, pending+24, 1)
	if r := verifyT(t, path); r.State != Corrupt {
		dumpReport(t, r)
		t.Fatalf("reserved word +56 set: state %v, want corrupt", r.State)
	}
	rep, err = Rebuild(path, keysSource(10), booted(&RepairOptions{}, testBoot))
	if err != nil || rep.State != Clean || wordAt(t, path, pending) != 0 || wordAt(t, path, pending+24) != 0 {
		t.Fatalf("Rebuild: %v, %v, pending word %#x, +56 %#x after", err, rep, wordAt(t, path, pending), wordAt(t, path, pending+24))
	}
}

// TestTornFirstWiden: scaling's widen writes a filter's max id before its
// min id, so a writer killed between the two on the first Add into an empty
// filter leaves [2^64−1, id]. That range holds no id and no counter changed
// for it: Verify must not call the line garbage (which asked for a Rebuild
// from the source after a mere process kill), and Repair empties it. A
// range inverted any other way is still garbage (the negative control).
func TestTornFirstWiden(t *testing.T) {
	line := header.FilterLineOffset(0)
	minOff, maxOff := line+header.FilterMinIDOffset, line+header.FilterMaxIDOffset

	path := newFile(t, 100, counting4.Blocked1024, 0)
	if lo, hi := wordAt(t, path, minOff), wordAt(t, path, maxOff); lo != ^uint64(0) || hi != 0 {
		t.Fatalf("a new filter's range is [%#x, %#x], want [2^64-1, 0]", lo, hi)
	}
	putWord(t, path, maxOff, 5)
	r := verifyT(t, path)
	noted := false
	for _, f := range r.Findings {
		noted = noted || f.Filter == 0 && f.Field == "id range" && f.State == Clean
	}
	if r.State != Clean || len(r.NeedsRebuild) != 0 || !noted {
		dumpReport(t, r)
		t.Fatalf("torn first widening: state %v, rebuild %v, noted %v; want clean, none, a clean note on the id range", r.State, r.NeedsRebuild, noted)
	}
	rep, err := Repair(path, booted(&RepairOptions{}, testBoot))
	if err != nil || rep.State != Clean {
		t.Fatalf("Repair: %v, %v", err, rep)
	}
	if lo, hi := wordAt(t, path, minOff), wordAt(t, path, maxOff); lo != ^uint64(0) || hi != 0 {
		t.Fatalf("after Repair the range is [%#x, %#x], want the empty [2^64-1, 0]", lo, hi)
	}
	if r := verifyT(t, path); r.State != Clean || len(r.Findings) != 0 {
		dumpReport(t, r)
		t.Fatalf("after Repair: state %v, %d findings; want clean, none", r.State, len(r.Findings))
	}
	f, err := scaling.Open(path, booted(&scaling.OpenOptions{}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Add(key(3), 3); err != nil {
		t.Fatal(err)
	}
	if st := f.Stats().Filters[0]; st.FirstID != 3 || st.LastID != 3 {
		t.Fatalf("after an Add with id 3 the range is [%d, %d]", st.FirstID, st.LastID)
	}
	if err := f.Remove(key(3), 3); err != nil {
		t.Fatal(err)
	}

	// Negative control: a range inverted with a real min id is garbage.
	bad := newFile(t, 100, counting4.Blocked1024, 10)
	putWord(t, bad, minOff, 10)
	putWord(t, bad, maxOff, 5)
	if r := verifyT(t, bad); r.State != Corrupt || len(r.NeedsRebuild) != 1 {
		dumpReport(t, r)
		t.Fatalf("range [10, 5]: state %v, rebuild %v; want corrupt, filter 0", r.State, r.NeedsRebuild)
	}
}
