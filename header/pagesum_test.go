package header

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCoveredPagesInvertsSumPages: for every filter length, CoveredPages
// finds the one number of covered pages whose check pages fill it, or
// says there is none; every number of covered pages has a length.
func TestCoveredPagesInvertsSumPages(t *testing.T) {
	seen := map[int64]bool{}
	for d := int64(1); d <= 300000; d += 1 + d/97 {
		total := d + SumPages(d)
		got, ok := CoveredPages(total)
		if !ok || got != d {
			t.Fatalf("CoveredPages(%d) = %d, %v; want %d", total, got, ok, d)
		}
		seen[total] = true
	}
	for total := int64(0); total < 20000; total++ {
		d, ok := CoveredPages(total)
		if ok != (d > 0 && d+SumPages(d) == total) {
			t.Fatalf("CoveredPages(%d) = %d, %v: inconsistent", total, d, ok)
		}
		if ok && seen[total] && d == 0 {
			t.Fatalf("CoveredPages(%d): no pages", total)
		}
	}
	if _, ok := CoveredPages(2); ok {
		t.Fatal("a filter of 2 pages has room for a page of counters and its check pages")
	}
}

// TestPageSumGolden pins the layout of the check pages and the checksum
// (testdata/pagesum.golden; -update rewrites it): any change to either is
// a format change.
func TestPageSumGolden(t *testing.T) {
	var b strings.Builder
	for _, length := range []int64{3 * PageSize, 26 * PageSize, (4096 + 2) * PageSize, (4096 + 1 + 4) * PageSize, (1<<20 + 256 + 1024) * PageSize, 5 * PageSize, 4102 * PageSize} {
		l, ok := SumLayoutOf(DataOffset, length)
		fmt.Fprintf(&b, "length %d: ok %v covered %d map %d sums %d end %d\n", length, ok, l.Covered, l.MapOffset, l.SumsOffset, l.End)
	}
	page := make([]byte, PageSize)
	fmt.Fprintf(&b, "zero page: %08x\n", PageSum(page))
	for i := range page {
		page[i] = byte(i*7 + i>>8)
	}
	fmt.Fprintf(&b, "pattern page: %08x\n", PageSum(page))
	fmt.Fprintf(&b, "0xFF page: %08x\n", PageSum(bytes.Repeat([]byte{0xff}, PageSize)))
	path := filepath.Join("testdata", "pagesum.golden")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if b.String() != string(want) {
		t.Fatalf("check pages or checksum differ from %s (a format change):\ngot:\n%swant:\n%s", path, b.String(), want)
	}
}

// BenchmarkPageSum measures the checksum of one page (CRC-32C, hardware on
// amd64 and arm64): the cost Flush pays per changed page and Verify per
// page.
func BenchmarkPageSum(b *testing.B) {
	page := make([]byte, PageSize)
	for i := range page {
		page[i] = byte(i)
	}
	b.SetBytes(PageSize)
	var s uint32
	for b.Loop() {
		s += PageSum(page)
	}
	_ = s
}

// TestAddSumsKeepsTheRegions: a filter given check pages keeps its
// counters, counts page and index where they were, and decodes from a
// file with FlagPageSums with the same regions.
func TestAddSumsKeepsTheRegions(t *testing.T) {
	m := sumsMeta()
	b := encode(m)
	got, err := Decode(b, 0, m.End())
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range got.Filters {
		plain := goldenMeta().Filters[i]
		if i == 1 {
			plain.Extra = CountsBytes + IndexBytes(plain.Capacity)
			plain.Length += plain.Extra
		}
		l, ok := f.SumLayout()
		switch {
		case !ok || f.Sums == 0 || l.End != f.Offset+f.Length || l.MapOffset != f.Offset+plain.Length:
			t.Fatalf("filter %d: layout %+v (ok %v), sums %d, desc %+v", i, l, ok, f.Sums, f)
		case f.CounterBytes() != plain.CounterBytes() || f.HasCounts() != plain.HasCounts() || f.IndexBytes() != plain.IndexBytes():
			t.Fatalf("filter %d: counters %d counts %v index %d, want %d %v %d", i, f.CounterBytes(), f.HasCounts(), f.IndexBytes(), plain.CounterBytes(), plain.HasCounts(), plain.IndexBytes())
		case f.CoveredBytes() != plain.Length || l.Covered*PageSize != plain.Length:
			t.Fatalf("filter %d: covers %d bytes (%d pages), want %d", i, f.CoveredBytes(), l.Covered, plain.Length)
		}
	}
}

// TestPageMapMarksOnePageByte: marking page p sets byte p of the map
// (the format's one byte per page) and no other; Take returns and clears
// the word's marks.
func TestPageMapMarksOnePageByte(t *testing.T) {
	b := make([]byte, PageSize)
	m := PageMapOf(b)
	for _, p := range []uint64{0, 1, 6, 4095} {
		clear(b)
		m.Mark(p)
		m.Mark(p) // a second mark changes nothing
		for i, c := range b {
			if want := byte(0); uint64(i) == p {
				want = PageChanged
				if c != want {
					t.Fatalf("mark %d: byte %d = %d, want %d", p, i, c, want)
				}
			} else if c != want {
				t.Fatalf("mark %d: byte %d = %d, want 0", p, i, c)
			}
		}
		if !m.Changed(p) || (p > 0 && m.Changed(p-1)) {
			t.Fatalf("mark %d: Changed wrong", p)
		}
		if w := m.Take(int(p / 4)); w != PageChanged<<(p%4*8) || m.Changed(p) || b[p] != 0 {
			t.Fatalf("take %d: %#x, then changed %v", p, w, m.Changed(p))
		}
	}
}
