package recover

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/scaling"
)

// overlapFile makes a two-filter file (ids 1..150, filter 0 holding the
// first 100) and returns its bytes, with filter 1's id range as the chain
// left it and its line's offset.
func overlapFile(t *testing.T) (b []byte, m *header.Meta, line1 int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "o.dbl")
	f, err := scaling.Create(path, booted(&scaling.Options{Capacity: 100, ErrorRate: 0.01}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 150; i++ {
		if err := f.Add(key(i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	pick, err := header.Pick(b[:2*header.MetaSize], int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if m = pick.Meta; len(m.Filters) != 2 || m.Filters[1].IndexBytes() == 0 {
		t.Fatalf("%d filters, the second with a %d-byte index: the test shows nothing", len(m.Filters), m.Filters[1].IndexBytes())
	}
	return b, m, header.FilterLineOffset(m.Filters[1].Slot)
}

// rangeFindings returns the findings on id ranges that overlap.
func rangeFindings(t *testing.T, b []byte) []Finding {
	t.Helper()
	a, err := analyze(bytesImage(b), parseBootID(testBoot), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []Finding
	for _, f := range a.report("").Findings {
		if f.Field == "id range" && strings.Contains(f.Message, "overlaps") {
			out = append(out, f)
		}
	}
	return out
}

// TestVerifyOverlappingRanges (issue 27, item 2): a filter with a late-add
// index never widens its range over an older filter's, so a file where it
// did (here by hand: filter 1's first id moved into filter 0's range) gets
// a finding that says so, located at filter 1's first-id word and naming both ranges. The
// file as the chain left it has no such finding; a filter without an index
// (version 1.0's routing, which widens over older ranges) gets a note that
// says that is how it routes.
func TestVerifyOverlappingRanges(t *testing.T) {
	b, m, line1 := overlapFile(t)
	if got := rangeFindings(t, b); len(got) != 0 {
		t.Fatalf("the file as written: %v", got)
	}
	lo0 := le.Uint64(b[header.FilterLineOffset(m.Filters[0].Slot)+header.FilterMinIDOffset:])
	hi0 := le.Uint64(b[header.FilterLineOffset(m.Filters[0].Slot)+header.FilterMaxIDOffset:]) & header.MaxID
	lo1 := le.Uint64(b[line1+header.FilterMinIDOffset:])
	if lo0 > hi0 || hi0 >= lo1 {
		t.Fatalf("ranges [%d, %d] and [%d, ...]: the test shows nothing", lo0, hi0, lo1)
	}
	le.PutUint64(b[line1+header.FilterMinIDOffset:], hi0-5) // as 1.0's widen would
	got := rangeFindings(t, b)
	if len(got) != 1 || !strings.Contains(got[0].Message, "routing never does") || got[0].Filter != m.Filters[1].Slot || got[0].Offset != line1+header.FilterMinIDOffset {
		t.Fatalf("findings %v; want one finding of broken routing at filter %d, offset %d", got, m.Filters[1].Slot, line1+header.FilterMinIDOffset)
	}
	if want := "in ids [" + itoa(hi0-5) + ", " + itoa(hi0) + "]"; !strings.Contains(got[0].Message, want) {
		t.Errorf("the finding does not name the overlap %q: %s", want, got[0].Message)
	}

	// The same ranges on a filter without a late-add index: a note.
	m.Filters[1].Extra = header.PageSize + m.Filters[1].Sums
	m.Generation++
	for _, off := range metaOffsets {
		header.Encode(b[off:off+header.MetaSize], m)
	}
	le.PutUint64(b[line1+header.FilterIndexOffset:], header.IndexNone)
	got = rangeFindings(t, b)
	if len(got) != 1 || strings.Contains(got[0].Message, "routing never does") {
		t.Errorf("without an index: findings %v; want one note of 1.0 routing", got)
	}
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }
