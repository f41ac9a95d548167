package recover

import (
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/scaling"
)

// chainCrash builds a chain of 8 filters of 64 items (growth 1) in the
// crash model: keys 1..420 are added (filters 0-5 full, filter 6 holds 36)
// and flushed; then keys up to 480 fill filter 6 and start filter 7, and the
// machine crashes. Only filters 6 and 7 changed since the flush. It returns
// the disk after the crash and the keys whose Add returned.
func chainCrash(t *testing.T, seed int64, garbage bool) ([]byte, map[int]bool) {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	r := newCrashRegion()
	r.reset(nil, rng)
	f, err := createRegion(r, booted(&scaling.Options{Capacity: 64, GrowthFactor: 1, ErrorRate: 0.05, Layout: counting4.Classic, Seed: 11}, bootBefore))
	if err != nil {
		t.Fatal(err)
	}
	truth := map[int]bool{}
	for i := 1; i <= 420; i++ {
		if err := f.Add(key(i), uint64(i)); err != nil {
			t.Fatal(err)
		}
		truth[i] = true
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	r.wbProb = 0.3
	for i := 421; i <= 480; i++ {
		r.event()
		if err := f.Add(key(i), uint64(i)); err != nil {
			t.Fatal(err)
		}
		truth[i] = true
	}
	st := f.Stats()
	if len(st.Filters) != 8 {
		t.Fatalf("%d filters, want 8", len(st.Filters))
	}
	for i, fs := range st.Filters {
		if fs.Dirty != (i >= 6) {
			t.Fatalf("filter %d dirty = %v before the crash", i, fs.Dirty)
		}
	}
	r.crash()
	return r.image(rng, tornOdds{0.4, 0.4}, garbage, nil), truth
}

// TestRebuildTargeted crashes the model while only the newest two of 8
// filters are dirty; Rebuild must ask the source only for their id ranges,
// keep the others byte for byte, and leave no false negative.
func TestRebuildTargeted(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 10
	}
	for seed := range int64(seeds) {
		img, truth := chainCrash(t, seed, false)
		dir := t.TempDir()
		path := filepath.Join(dir, "chain.dbl")
		if err := os.WriteFile(path, img, 0o644); err != nil {
			t.Fatal(err)
		}
		before, err := VerifyWithOptions(path, booted(&VerifyOptions{}, bootAfter))
		if err != nil {
			t.Fatal(err)
		}
		if before.State != Dirty {
			dumpReport(t, before)
			t.Fatalf("seed %d: verify says %s, want dirty", seed, before.State)
		}
		if len(before.NeedsRebuild) != 2 || before.NeedsRebuild[0] != 6 || before.NeedsRebuild[1] != 7 {
			t.Fatalf("seed %d: needs rebuild %v, want [6 7]", seed, before.NeedsRebuild)
		}
		if _, err := scaling.Open(path, booted(&scaling.OpenOptions{}, bootAfter)); !errors.Is(err, scaling.ErrUnclean) {
			t.Fatalf("seed %d: Open of a dirty file: %v, want ErrUnclean", seed, err)
		}
		var calls [][2]uint64
		rep, err := Rebuild(path, truthSource(truth, &calls), booted(&RepairOptions{}, bootAfter))
		if err != nil {
			t.Fatal(err)
		}
		if rep.State != Clean {
			dumpReport(t, rep)
			t.Fatalf("seed %d: after rebuild: %s", seed, rep.State)
		}
		// Filter 6 holds ids 385..448, filter 7 from 449 on.
		if len(calls) != 2 || calls[0] != [2]uint64{385, 448} || calls[1][0] != 449 || calls[1][1] != header.MaxID {
			t.Fatalf("seed %d: source asked for %v, want [[385 448] [449 max]]", seed, calls)
		}
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 6 {
			d := before.Filters[i]
			if string(after[d.Offset:d.Offset+d.Length]) != string(img[d.Offset:d.Offset+d.Length]) {
				t.Fatalf("seed %d: filter %d, clean at the crash, changed", seed, i)
			}
		}
		if fn, err := falseNegatives(after, bootAfter, truth); err != nil || fn > 0 {
			t.Fatalf("seed %d: %d false negatives (%v)", seed, fn, err)
		}
		bak, err := os.ReadFile(path + ".bak")
		if err != nil || string(bak) != string(img) {
			t.Fatalf("seed %d: the backup is not the original (%v)", seed, err)
		}
		f, err := scaling.Open(path, booted(&scaling.OpenOptions{}, bootAfter))
		if err != nil {
			t.Fatalf("seed %d: open after rebuild: %v", seed, err)
		}
		f.Close()
	}
}

// TestRebuildTornGarbage is TestRebuildTargeted with garbage sectors in the
// torn pages: Rebuild may need to ask for more (a garbage line or hot page
// hides which filters changed), but the result is clean with no false
// negative.
func TestRebuildTornGarbage(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 15
	}
	wider := 0
	for seed := range int64(seeds) {
		img, truth := chainCrash(t, 1000+seed, true)
		var calls [][2]uint64
		fixed, rep, _, err := recoverImage(img, bootAfter, truthSource(truth, &calls), seed%2 == 0)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if rep.State != Clean {
			dumpReport(t, rep)
			t.Fatalf("seed %d: after rebuild: %s", seed, rep.State)
		}
		if len(calls) > 2 {
			wider++
		}
		if fn, err := falseNegatives(fixed, bootAfter, truth); err != nil || fn > 0 {
			t.Fatalf("seed %d: %d false negatives (%v)", seed, fn, err)
		}
	}
	t.Logf("%d of %d crashes with garbage sectors needed more than the two dirty filters rebuilt", wider, seeds)
}

// TestRebuildTruncated: a file cut short (both metadata copies valid, the
// last filter past the end) is corrupt with the cut filters to rebuild;
// Rebuild writes it at full size, clean, with every key (issue 11, item 15).
func TestRebuildTruncated(t *testing.T) {
	path := newFile(t, 100, counting4.Blocked512, 500)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, st.Size()-header.PageSize); err != nil {
		t.Fatal(err)
	}
	r := verifyT(t, path)
	if n := len(r.Filters); r.State != Corrupt || n < 2 || !slices.Equal(r.NeedsRebuild, []int{n - 1}) {
		dumpReport(t, r)
		t.Fatalf("truncated: state %v, needs rebuild %v", r.State, r.NeedsRebuild)
	}
	out := filepath.Join(t.TempDir(), "out.dbl")
	rep, err := Rebuild(path, keysSource(500), booted(&RepairOptions{Output: out}, testBoot))
	if err != nil || rep.State != Clean {
		dumpReport(t, rep)
		t.Fatalf("Rebuild: %v, %v", err, rep)
	}
	if st2, err := os.Stat(out); err != nil || st2.Size() != st.Size() {
		t.Fatalf("rebuilt file: %v, %v bytes, want %d", err, st2, st.Size())
	}
	f, err := scaling.Open(out, booted(&scaling.OpenOptions{ReadOnly: true}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := 1; i <= 500; i++ {
		if !f.Contains(key(i)) {
			t.Fatalf("key %d missing after Rebuild", i)
		}
	}
}
