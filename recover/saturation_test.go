package recover

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/scaling"
)

// chainOf returns the filters of the chain of the file at path.
func chainOf(t testing.TB, path string) []header.FilterDesc {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := header.Pick(b[:2*header.MetaSize], int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return p.Filters
}

// fillFF writes n bytes of 0xFF at off of the file at path.
func fillFF(t testing.TB, path string, off, n int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteAt(bytes.Repeat([]byte{0xff}, int(n)), off)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

// runFindings returns the findings of saturated runs: damaged, on counters.
func runFindings(r *Report) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.State == Damaged && f.Field == "counters" && strings.Contains(f.Message, "all saturated") {
			out = append(out, f)
		}
	}
	return out
}

// wantRunAt fails unless r reports damage of filter entry e with a saturated
// run found in [off, off+n), and lists the filter for Rebuild.
func wantRunAt(t testing.TB, r *Report, e int, off, n int64) {
	t.Helper()
	if r.State != Damaged && r.State != Corrupt {
		dumpReport(t, r)
		t.Fatalf("0xFF run at %d (+%d) in filter %d: state %v, want damaged", off, n, e, r.State)
	}
	found := false
	for _, f := range runFindings(r) {
		if f.Filter == e && f.Offset >= off && f.Offset < off+n {
			found = true
		}
	}
	if !found {
		dumpReport(t, r)
		t.Fatalf("0xFF run at %d (+%d) in filter %d: no finding of a saturated run there", off, n, e)
	}
	listed := false
	for _, x := range r.NeedsRebuild {
		listed = listed || x == e
	}
	if !listed {
		t.Fatalf("0xFF run in filter %d: NeedsRebuild %v does not list it", e, r.NeedsRebuild)
	}
}

// TestSaturatedPageIsDamage is the first case (issue 29): one 4 KiB
// page of 0xFF written over the counters of a filter 25% full, in a file of
// the current format (1.3), for every layout. Verify used to call it clean;
// it must report the filter and the page, and a Rebuild from the
// application's keys (the advice) must leave the file verifying clean.
func TestSaturatedPageIsDamage(t *testing.T) {
	for _, layout := range []counting4.Layout{counting4.Blocked1024, counting4.Blocked512, counting4.Classic} {
		t.Run(layout.String(), func(t *testing.T) {
			const capacity, n = 40000, 10000
			path := newFile(t, capacity, layout, n)
			d := chainOf(t, path)[0]
			page := d.Offset + 5*header.PageSize
			fillFF(t, path, page, header.PageSize)
			r := verifyT(t, path)
			wantRunAt(t, r, d.Slot, page, header.PageSize)
			if err := r.Err(); err == nil {
				t.Fatalf("damaged report without an error")
			}
			for _, f := range runFindings(r) {
				if !strings.Contains(f.Message, "--rebuild-from") {
					t.Fatalf("finding gives no advice that works: %v", f)
				}
			}
			rep, err := Rebuild(path, keysSource(n), booted(&RepairOptions{NoBackup: true}, testBoot))
			if err != nil {
				t.Fatalf("Rebuild: %v", err)
			}
			if rep.State != Clean {
				dumpReport(t, rep)
				t.Fatalf("after Rebuild: %v", rep.State)
			}
			if r := verifyT(t, path); r.State != Clean || len(runFindings(r)) != 0 {
				dumpReport(t, r)
				t.Fatalf("Verify after Rebuild: %v", r.State)
			}
		})
	}
}

// TestThreeSaturatedRunsAreDamage is the second case: three 4 KiB
// runs of 0xFF in a 20,000-key file of several filters, at offsets that are
// not page-aligned; each is reported at its filter.
func TestThreeSaturatedRunsAreDamage(t *testing.T) {
	path := newFile(t, 5000, counting4.Blocked1024, 20000)
	chain := chainOf(t, path)
	if len(chain) < 3 {
		t.Fatalf("%d filters, want 3 or more", len(chain))
	}
	for j, d := range chain[:3] {
		off := d.Offset + int64(1000+700*j)
		fillFF(t, path, off, header.PageSize)
	}
	r := verifyT(t, path)
	for j, d := range chain[:3] {
		wantRunAt(t, r, d.Slot, d.Offset+int64(1000+700*j), header.PageSize)
	}
}

// baseFile is a flushed file made by build, copied for each use.
type baseFile struct {
	bytes []byte
	chain []header.FilterDesc
}

func makeBase(t testing.TB, build func(f *scaling.Filter)) *baseFile {
	t.Helper()
	path := filepath.Join(t.TempDir(), "base.dbl")
	f, err := scaling.Create(path, booted(&scaling.Options{Capacity: 3000, ErrorRate: 0.01, Seed: 7}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	build(f)
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if r := verifyT(t, path); r.State != Clean {
		dumpReport(t, r)
		t.Fatalf("base file: %v", r.State)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return &baseFile{bytes: b, chain: chainOf(t, path)}
}

// TestSaturatedRunFuzz writes random page-sized runs of 0xFF over the
// counters of clean files (one with no saturated counter, one with hot keys
// added hundreds of times) and checks that each is reported at the right
// filter, at an offset inside the run.
func TestSaturatedRunFuzz(t *testing.T) {
	plain := func(f *scaling.Filter) {
		for i := 1; i <= 7000; i++ {
			if err := f.Add(key(i), uint64(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	hot := func(f *scaling.Filter) {
		id := uint64(1)
		for i := 1; i <= 6000; i++ {
			if err := f.Add(key(i), id); err != nil {
				t.Fatal(err)
			}
			id++
			if i%1000 == 0 { // a hot key, 200 times
				for range 200 {
					if err := f.Add([]byte(fmt.Sprintf("hot-%d", i)), id); err != nil {
						t.Fatal(err)
					}
					id++
				}
			}
		}
	}
	iters := 300
	if testing.Short() {
		iters = 60
	}
	dir := t.TempDir()
	for name, build := range map[string]func(*scaling.Filter){"plain": plain, "hot": hot} {
		base := makeBase(t, build)
		rng := rand.New(rand.NewPCG(29, uint64(len(name))))
		checked := 0
		for it := range iters {
			d := base.chain[rng.IntN(len(base.chain))]
			span := int64(d.Counters / 2)
			if span < 2*header.PageSize {
				continue
			}
			off := d.Offset + rng.Int64N(span-header.PageSize+1)
			b := bytes.Clone(base.bytes)
			copy(b[off:off+header.PageSize], bytes.Repeat([]byte{0xff}, header.PageSize))
			path := filepath.Join(dir, fmt.Sprintf("%s-%d.dbl", name, it))
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			wantRunAt(t, verifyT(t, path), d.Slot, off, header.PageSize)
			os.Remove(path)
			checked++
		}
		if checked < iters/2 {
			t.Fatalf("%s: only %d of %d runs fell in filters large enough", name, checked, iters)
		}
	}
}

// TestSaturationNoFalseAlarm: files the library writes, with hot keys added
// hundreds of times, full filters of every layout, and a filter whose keys
// were added more than 15 times and removed again until most counters are
// saturated, verify without a finding of damage.
func TestSaturationNoFalseAlarm(t *testing.T) {
	noDamage := func(t *testing.T, path string) *Report {
		t.Helper()
		r := verifyT(t, path)
		if r.State != Clean || len(runFindings(r)) != 0 {
			dumpReport(t, r)
			t.Fatalf("state %v, want clean", r.State)
		}
		return r
	}
	create := func(t *testing.T, capacity uint64, layout counting4.Layout) (*scaling.Filter, string) {
		path := filepath.Join(t.TempDir(), "s.dbl")
		f, err := scaling.Create(path, booted(&scaling.Options{Capacity: capacity, ErrorRate: 0.01, Layout: layout, Seed: 3}, testBoot))
		if err != nil {
			t.Fatal(err)
		}
		return f, path
	}
	closeF := func(t *testing.T, f *scaling.Filter) {
		if err := f.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, layout := range []counting4.Layout{counting4.Blocked1024, counting4.Blocked512, counting4.Classic} {
		t.Run("full-"+layout.String(), func(t *testing.T) {
			f, path := create(t, 5000, layout)
			for i := 1; i <= 5000; i++ {
				if err := f.Add(key(i), uint64(i)); err != nil {
					t.Fatal(err)
				}
			}
			closeF(t, f)
			noDamage(t, path)
		})
		t.Run("hot-"+layout.String(), func(t *testing.T) {
			// 20 keys added 250 times each: the filter is full of them.
			f, path := create(t, 5000, layout)
			id := uint64(1)
			for h := range 20 {
				for range 250 {
					if err := f.Add([]byte(fmt.Sprintf("hot-%d", h)), id); err != nil {
						t.Fatal(err)
					}
					id++
				}
			}
			closeF(t, f)
			r := noDamage(t, path)
			if n := len(r.Findings); n != 0 {
				dumpReport(t, r)
				t.Fatalf("%d findings on a filter of hot keys, want none", n)
			}
		})
		t.Run("churn-"+layout.String(), func(t *testing.T) {
			// Keys added 16 times and removed 16 times: each leaves its
			// counters saturated for good. Go on until most counters are.
			// Verify after every 300 keys: no state on the way is damage.
			f, path := create(t, 200, layout)
			for c := 0; c < 6000; c++ {
				k := []byte(fmt.Sprintf("churn-%d", c))
				for range 16 {
					if err := f.Add(k, 1); err != nil {
						t.Fatal(err)
					}
				}
				for range 16 {
					if err := f.Remove(k, 1); err != nil {
						t.Fatal(err)
					}
				}
				if c%300 != 299 {
					continue
				}
				if err := f.Flush(); err != nil {
					t.Fatal(err)
				}
				if r := noDamage(t, path); r.Filters[0].Saturated*10 > r.Filters[0].Counters*9 {
					break
				}
			}
			closeF(t, f)
			if r := noDamage(t, path); r.Filters[0].Saturated*10 <= r.Filters[0].Counters*9 {
				t.Fatalf("%d of %d counters saturated: the churn did not saturate the filter", r.Filters[0].Saturated, r.Filters[0].Counters)
			}
		})
	}
}

// TestRunChance pins the bound of the run test.
func TestRunChance(t *testing.T) {
	for _, c := range []struct {
		n, f, r uint64
		alarm   bool
	}{
		{6000, 32, 32, true},   // one page overwritten in a large filter
		{64, 32, 32, true},     // one page of a two-page filter
		{6000, 2, 2, false},    // two full units side by side by chance
		{6000, 3000, 8, false}, // half the units full: runs of 8 happen
		{64, 64, 64, false},    // every unit full: nothing to tell
		{6000, 0, 0, false},
	} {
		if got := runChance(c.n, c.f, c.r) < satRunAlarm; got != c.alarm {
			t.Errorf("runChance(%d, %d, %d) = %g: alarm %v, want %v", c.n, c.f, c.r, runChance(c.n, c.f, c.r), got, c.alarm)
		}
	}
}
