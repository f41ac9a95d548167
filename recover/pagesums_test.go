package recover

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/scaling"
)

// sumsBase builds a flushed 1.4 file through the whole write path: growth,
// late Adds into the late-add indexes, Removes; with hot, keys added
// hundreds of times (saturated counters, where the counter-sum test is
// blind).
func sumsBase(t *testing.T, hot bool) *baseFile {
	return makeBase(t, func(f *scaling.Filter) {
		for i := 1; i <= 9000; i++ {
			if err := f.Add(key(i), uint64(i)); err != nil {
				t.Fatal(err)
			}
			if hot && i%1500 == 0 {
				for range 200 {
					if err := f.Add(fmt.Appendf(nil, "hot-%d", i), uint64(i)); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		for i := 1; i <= 400; i++ { // late Adds, into the newer filters' indexes
			if err := f.Add(fmt.Appendf(nil, "late-%d", i), uint64(i)); err != nil {
				t.Fatal(err)
			}
		}
		for i := 1; i <= 9000; i += 4 {
			if err := f.Remove(key(i), uint64(i)); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// verifyBytes verifies a file image in memory.
func verifyBytes(t testing.TB, b []byte) (*analysis, *Report) {
	t.Helper()
	a, err := analyze(bytesImage(b), parseBootID(testBoot), nil)
	if err != nil {
		t.Fatal(err)
	}
	return a, a.report("image")
}

// pageFinding returns the page checksum finding of filter e at off.
func pageFinding(r *Report, e int, off int64) *Finding {
	for i, f := range r.Findings {
		if f.Field == "page checksum" && f.Filter == e && f.Offset == off && f.State == Damaged {
			return &r.Findings[i]
		}
	}
	return nil
}

// TestPageSumDamageFuzz (issue 29): random single-byte, single-bit and
// page-sized changes to a clean 1.4 file's counter, item-count and
// late-add index pages, in a file without and with saturated counters:
// each is reported as damage at the right filter and page, and the filter
// is listed for Rebuild. None may be missed.
func TestPageSumDamageFuzz(t *testing.T) {
	iters := 3000
	if testing.Short() {
		iters = 600
	}
	for _, hot := range []bool{false, true} {
		t.Run(fmt.Sprintf("hot=%v", hot), func(t *testing.T) {
			base := sumsBase(t, hot)
			type region struct {
				d        header.FilterDesc
				off, len int64
				name     string
			}
			var regions []region
			for _, d := range base.chain {
				if d.Sums == 0 {
					t.Fatalf("filter %d has no check pages", d.Slot)
				}
				regions = append(regions, region{d, d.Offset, d.CounterBytes(), "counters"})
				if d.HasCounts() {
					regions = append(regions, region{d, d.CountsOffset(), header.CountsBytes, "counts"})
				}
				if d.IndexBytes() > 0 {
					regions = append(regions, region{d, d.IndexOffset(), d.IndexBytes(), "index"})
				}
			}
			if !slices.ContainsFunc(regions, func(r region) bool { return r.name == "index" }) {
				t.Fatal("no filter has a late-add index")
			}
			rng := rand.New(rand.NewPCG(29, 2))
			b := bytes.Clone(base.bytes)
			seen := map[string]int{}
			for it := range iters {
				rg := regions[rng.IntN(len(regions))]
				off := rg.off + rng.Int64N(rg.len)
				page := off &^ (header.PageSize - 1)
				old := bytes.Clone(b[page : page+header.PageSize])
				kind := []string{"byte", "bit", "page"}[it%3]
				switch kind {
				case "byte":
					b[off] ^= byte(1 + rng.IntN(255))
				case "bit":
					b[off] ^= 1 << rng.IntN(8)
				case "page":
					fill := [][]byte{bytes.Repeat([]byte{0xff}, header.PageSize), make([]byte, header.PageSize), nil}[rng.IntN(3)]
					if fill == nil {
						fill = make([]byte, header.PageSize)
						for i := range fill {
							fill[i] = byte(rng.Uint32())
						}
					}
					copy(b[page:], fill)
				}
				if bytes.Equal(old, b[page:page+header.PageSize]) {
					continue // (a zero page zeroed: no change)
				}
				seen[rg.name+" "+kind]++
				_, r := verifyBytes(t, b)
				if pageFinding(r, rg.d.Slot, page) == nil || r.State < Damaged || !slices.Contains(r.NeedsRebuild, rg.d.Slot) {
					dumpReport(t, r)
					t.Fatalf("iteration %d: %s change at %d (%s page %d of filter %d) not reported at its page (state %v, rebuild %v)",
						it, kind, off, rg.name, (page-rg.d.Offset)/header.PageSize, rg.d.Slot, r.State, r.NeedsRebuild)
				}
				copy(b[page:], old)
			}
			if _, r := verifyBytes(t, b); r.State != Clean {
				t.Fatalf("restored file: %v", r.State)
			}
			for _, k := range []string{"counters byte", "counters bit", "counters page", "counts byte", "index page"} {
				if seen[k] == 0 {
					t.Errorf("no %s change was tried: %v", k, seen)
				}
			}
			t.Logf("changes tried (all reported): %v", seen)
		})
	}
}

// TestPageSumQuickSkipsPages: verify --quick does not read the page
// checksums (the 0xFF page over counters of a filter with saturated
// counters is then found only by the saturation test, or not at all),
// the full verify reports it.
func TestPageSumQuickSkipsPages(t *testing.T) {
	base := sumsBase(t, false)
	d := base.chain[0]
	b := bytes.Clone(base.bytes)
	b[d.CountsOffset()+8*64+3] ^= 0x10 // a writer's count no slot uses: not in any sum
	path := filepath.Join(t.TempDir(), "f.dbl")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := VerifyWithOptions(path, booted(&VerifyOptions{}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	if pageFinding(r, d.Slot, d.CountsOffset()) == nil {
		dumpReport(t, r)
		t.Fatal("full verify: no page checksum finding")
	}
	q, err := VerifyWithOptions(path, booted(&VerifyOptions{Quick: true}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range q.Findings {
		if f.Field == "page checksum" {
			t.Fatalf("quick verify read the checksums: %v", f)
		}
	}
}

// TestPageSumRebuildRepairs: a damaged page is reported, Rebuild from the
// application's source makes the file verify clean, with every checksum
// right again; Repair without a source leaves the filter marked dirty for
// Rebuild, and writes checksums that keep the file verifying without a
// false alarm.
func TestPageSumRebuildRepairs(t *testing.T) {
	keys := 5000
	base := makeBase(t, func(f *scaling.Filter) {
		for i := 1; i <= keys; i++ {
			if err := f.Add(key(i), uint64(i)); err != nil {
				t.Fatal(err)
			}
		}
	})
	d := base.chain[0]
	b := bytes.Clone(base.bytes)
	at := d.Offset + header.PageSize + int64(slices.IndexFunc(b[d.Offset+header.PageSize:], func(c byte) bool { return c != 0 }))
	b[at] = 0 // lowers counters: false negatives
	dir := t.TempDir()
	path := filepath.Join(dir, "f.dbl")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r := verifyT(t, path)
	if pageFinding(r, d.Slot, at&^(header.PageSize-1)) == nil || !slices.Contains(r.NeedsRebuild, d.Slot) {
		dumpReport(t, r)
		t.Fatal("the damaged page is not reported")
	}
	// Repair without a source: the filter stays listed for Rebuild.
	if _, err := Repair(path, booted(&RepairOptions{}, testBoot)); err != nil {
		t.Fatal(err)
	}
	r = verifyT(t, path)
	if !slices.Contains(r.NeedsRebuild, d.Slot) {
		dumpReport(t, r)
		t.Fatal("after Repair without a source the damaged filter is not listed for Rebuild")
	}
	for _, f := range r.Findings {
		if f.Field == "page checksum" {
			t.Fatalf("after Repair: %v", f)
		}
	}
	src := Source(func(first, last uint64, add func(key []byte, id uint64) error) error {
		for i := max(first, 1); i <= min(last, uint64(keys)); i++ {
			if err := add(key(int(i)), i); err != nil {
				return err
			}
		}
		return nil
	})
	if _, err := Rebuild(path, src, booted(&RepairOptions{}, testBoot)); err != nil {
		t.Fatal(err)
	}
	if r := verifyT(t, path); r.State != Clean || len(r.NeedsRebuild) != 0 {
		dumpReport(t, r)
		t.Fatalf("after Rebuild: %v, rebuild %v", r.State, r.NeedsRebuild)
	}
}

// copyFile copies the file at src to a new file in dir.
func copyFile(t *testing.T, src, dir string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, filepath.Base(src))
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestUpgradeAddsPageSums: a version 1.0 file, grown by this library
// (filters with item counts and a late-add index, none with check pages),
// and a 1.0 file with retired filters, upgrade to 1.4: the result
// verifies clean with every page checked, answers every key as before,
// takes Adds and Removes, and a changed byte in it is then found at its
// page.
func TestUpgradeAddsPageSums(t *testing.T) {
	for _, fixture := range []string{"v10-minor0.dbl", "v10-retire.dbl"} {
		t.Run(fixture, func(t *testing.T) {
			dir := t.TempDir()
			path := copyFile(t, filepath.Join("..", "scaling", "testdata", fixture), dir)
			f, err := scaling.Open(path, booted(&scaling.OpenOptions{}, testBoot))
			if err != nil {
				t.Fatal(err)
			}
			var keys [][]byte
			var ids []uint64
			next := uint64(1) << 20
			for i := 0; len(f.Stats().Filters) < 3 || i < 500; i++ {
				k := fmt.Appendf(nil, "up-%d", i)
				if err := f.Add(k, next); err != nil {
					t.Fatal(err)
				}
				keys, ids = append(keys, k), append(ids, next)
				next++
			}
			for i := range 30 { // late Adds
				k := fmt.Appendf(nil, "uplate-%d", i)
				if err := f.Add(k, 1<<20); err != nil {
					t.Fatal(err)
				}
				keys, ids = append(keys, k), append(ids, 1<<20)
			}
			if err := f.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			before := chainOf(t, path)
			for _, d := range before {
				if d.Sums != 0 {
					t.Fatal("the file to upgrade has check pages")
				}
			}
			rep, err := Upgrade(path, booted(&RepairOptions{NoBackup: true}, testBoot))
			if err != nil {
				t.Fatal(err)
			}
			if rep.State != Clean || !rep.Written {
				dumpReport(t, rep)
				t.Fatalf("upgrade: %v, written %v", rep.State, rep.Written)
			}
			after := chainOf(t, path)
			if len(after) != len(before) {
				t.Fatalf("%d filters after, %d before", len(after), len(before))
			}
			for i, d := range after {
				if d.Sums == 0 || d.CounterBytes() != before[i].CounterBytes() || d.IndexBytes() != before[i].IndexBytes() || d.HasCounts() != before[i].HasCounts() {
					t.Fatalf("filter %d: %+v, was %+v", i, d, before[i])
				}
			}
			if r := verifyT(t, path); r.State != Clean {
				dumpReport(t, r)
				t.Fatalf("after upgrade: %v", r.State)
			}
			g, err := scaling.Open(path, booted(&scaling.OpenOptions{}, testBoot))
			if err != nil {
				t.Fatal(err)
			}
			for i, k := range keys {
				if !g.Contains(k) {
					t.Fatalf("key %q (id %d) lost by the upgrade", k, ids[i])
				}
			}
			for i := len(keys) - 30; i < len(keys); i++ { // the late Adds go again
				if err := g.Remove(keys[i], ids[i]); err != nil {
					t.Fatalf("Remove of %q: %v", keys[i], err)
				}
			}
			if err := g.Add([]byte("after"), next); err != nil {
				t.Fatal(err)
			}
			if err := g.Flush(); err != nil {
				t.Fatal(err)
			}
			g.Close()
			if r := verifyT(t, path); r.State != Clean {
				dumpReport(t, r)
				t.Fatalf("after writing the upgraded file: %v", r.State)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			d := after[len(after)-1]
			b[d.Offset+5] ^= 0x40
			if _, r := verifyBytes(t, b); pageFinding(r, d.Slot, d.Offset) == nil {
				dumpReport(t, r)
				t.Fatal("a changed byte of the upgraded file is not found")
			}
		})
	}
}
