package recover

import (
	"errors"
	"os"
	"testing"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
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
	rep, err := Repair(path, &RepairOptions{BootID: testBoot})
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
	rep, err = Rebuild(path, keysSource(10), &RepairOptions{BootID: testBoot})
	if err != nil || rep.State != Clean || wordAt(t, path, pending) != 0 || wordAt(t, path, pending+24) != 0 {
		t.Fatalf("Rebuild: %v, %v, pending word %#x, +56 %#x after", err, rep, wordAt(t, path, pending), wordAt(t, path, pending+24))
	}
}
