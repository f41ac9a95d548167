package recover

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/testknobs"
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

// lowFirstIDFile makes a store whose newest filter's first id (the
// directory's, the id after the range of the filter before it when it was
// appended) lies in an older filter's range: filter 0 takes ids 1..50 and
// its slack; filter 1 then takes only Adds going back, all late (its range
// stays empty), until it is full; so filter 2 is appended with first id 1,
// and takes the fresh ids from 1000 on. The store is closed without a flush
// on bootBefore: dirty, as an OS crash leaves it. It returns the path, the
// keys added (key number -> id) and the newest filter's line offset.
func lowFirstIDFile(t *testing.T) (path string, truth map[int]uint64, newest int64) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "low.dbl")
	f, err := scaling.Create(path, booted(&scaling.Options{Capacity: 50, ErrorRate: 0.05, Seed: 7}, bootBefore))
	if err != nil {
		t.Fatal(err)
	}
	truth = map[int]uint64{}
	add := func(id uint64) {
		k := len(truth) + 1
		if err := f.Add(key(k), id); err != nil {
			t.Fatal(err)
		}
		truth[k] = id
	}
	for id := uint64(1); id <= 50; id++ {
		add(id)
	}
	for len(f.Stats().Filters) < 3 {
		add(uint64(1 + len(truth)%50))
	}
	for range 10 {
		add(uint64(1000 + len(truth)))
	}
	st := f.Stats().Filters
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	m := readMetaT(t, path)
	if len(m.Filters) != 3 || m.Filters[2].FirstID != 1 || m.Filters[2].IndexBytes() == 0 || st[1].LastID != 0 || st[2].FirstID < 1000 {
		t.Fatalf("filters %+v, first id of the newest %d: the test shows nothing", st, m.Filters[len(m.Filters)-1].FirstID)
	}
	return path, truth, header.FilterLineOffset(m.Filters[2].Slot)
}

// TestRebuildKeepsNewestRangeAboveOlder (issue 27, item 2, the Rebuild
// half): Rebuild after an OS crash asks the source for the newest filter's
// keys from its first id (or its line's first id, if smaller) on. A newest
// filter with a late-add index never widens its range over an id at or
// below the older filters' ranges, yet its first id can lie there (the
// filter before it had an empty range when it was appended), and a line
// whose range words an OS crash zeroed reads [0, 0]: so the rebuilt range
// took every older filter's keys and overlapped their ranges, and Removes
// of those keys were refused with ErrAmbiguous. After Rebuild, Verify must
// find no overlap, every key must be found, and every key must be removed
// by its id.
func TestRebuildKeepsNewestRangeAboveOlder(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose func(line []byte) // what the OS crash did to the newest filter's line
	}{
		{"first id in an older range", func([]byte) {}},
		{"widening lost", func(l []byte) {
			// The line as the growth synced it: the range empty.
			le.PutUint64(l[header.FilterMinIDOffset:], math.MaxUint64)
			le.PutUint64(l[header.FilterMaxIDOffset:], 0)
		}},
		{"range words zeroed", func(l []byte) {
			le.PutUint64(l[header.FilterMinIDOffset:], 0)
			le.PutUint64(l[header.FilterMaxIDOffset:], 0)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, truth, line := lowFirstIDFile(t)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tc.lose(b[line : line+header.LineSize])
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			rebuildAndCheck(t, path, truth)
		})
	}
}

// TestRebuildLegacyWidenedNewest: a newest filter with a late-add index
// whose line reads a range over an older one's (version 1.0's routing,
// Knobs.LegacyRouting, widened it, as a library before the fix of issue 27
// item 2 did) is rebuilt from above the older range; its keys there, in no
// index and held by no other filter, come back as late Adds. No key is
// lost, no range overlaps, and every key is removed by its id.
func TestRebuildLegacyWidenedNewest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "legacy.dbl")
	o := &scaling.Options{Capacity: 50, ErrorRate: 0.05, Seed: 7}
	testknobs.Set(o, &testknobs.Knobs{BootID: bootBefore, LegacyRouting: true})
	f, err := scaling.Create(path, o)
	if err != nil {
		t.Fatal(err)
	}
	truth := map[int]uint64{}
	add := func(id uint64) {
		k := len(truth) + 1
		if err := f.Add(key(k), id); err != nil {
			t.Fatal(err)
		}
		truth[k] = id
	}
	for id := uint64(1); id <= 51; id++ {
		add(id) // filter 1 starts at 51
	}
	for len(truth) < 67 {
		add(uint64(len(truth) % 50)) // filter 0's slack
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		add(uint64(1 + len(truth)%50)) // widen filter 1 over filter 0's range
	}
	st := f.Stats().Filters
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 2 || st[1].FirstID > 50 || len(rangeFindings(t, b)) != 1 {
		t.Fatalf("filters %+v, overlaps %v: the test shows nothing", st, rangeFindings(t, b))
	}
	rebuildAndCheck(t, path, truth)
}

// rebuildAndCheck rebuilds the store at path, dirty from bootBefore, from
// truth (key number -> id) after a reboot, and checks what Rebuild must
// leave: a clean file, no id range over an older one's (Verify's
// finding), no false negative, and every key removed by its id.
func rebuildAndCheck(t *testing.T, path string, truth map[int]uint64) {
	t.Helper()
	rep, err := Rebuild(path, truthSource(truth, nil), booted(&RepairOptions{NoBackup: true}, bootAfter))
	if err != nil {
		t.Fatal(err)
	}
	if rep.State != Clean || len(rep.NeedsRebuild) != 0 {
		dumpReport(t, rep)
		t.Fatalf("after Rebuild: %s, filters %v left for a Rebuild", rep.State, rep.NeedsRebuild)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := rangeFindings(t, after); len(got) != 0 {
		dumpReport(t, rep)
		t.Errorf("Rebuild made ranges overlap: %v", got)
	}
	if fn, err := falseNegatives(after, bootAfter, truth); err != nil || fn > 0 {
		dumpReport(t, rep)
		t.Fatalf("%d false negatives (%v)", fn, err)
	}
	f, err := scaling.Open(path, booted(&scaling.OpenOptions{}, bootAfter))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	refused := 0
	for k, id := range truth {
		if err := f.Remove(key(k), id); err != nil {
			if refused++; refused == 1 {
				t.Errorf("Remove of key %d, id %d: %v", k, id, err)
			}
		}
	}
	if refused > 0 {
		t.Errorf("%d of %d Removes refused", refused, len(truth))
	}
}
