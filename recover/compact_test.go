package recover

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/childproc"
	"github.com/dablooms/dablooms/scaling"
)

// chainFile creates a store of filters of capacity capacity that do not
// grow, holding keys 1..n (key i with id i), flushed, and returns its path.
func chainFile(t testing.TB, dir string, capacity uint64, n int) string {
	t.Helper()
	path := filepath.Join(dir, "s.dbl")
	f, err := scaling.Create(path, booted(&scaling.Options{Capacity: capacity, ErrorRate: 0.01, GrowthFactor: 1, TighteningRatio: 0.9,
		Layout: counting4.Blocked512, Seed: 42, Reserve: 1 << 30}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	keys := make([][]byte, 0, 1024)
	ids := make([]uint64, 0, 1024)
	for i := 1; i <= n; i++ {
		keys, ids = append(keys, key(i)), append(ids, uint64(i))
		if len(keys) == cap(keys) || i == n {
			if err := f.AddBatch(keys, ids); err != nil {
				t.Fatal(err)
			}
			keys, ids = keys[:0], ids[:0]
		}
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// liveSource yields key i with id i for every i in 1..n that live says is
// still there.
func liveSource(n int, live func(i int) bool) Source {
	return func(lo, hi uint64, add func([]byte, uint64) error) error {
		for i := max(lo, 1); i <= min(hi, uint64(n)); i++ {
			if live(int(i)) {
				if err := add(key(int(i)), i); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

func filterCount(t testing.TB, path string) int {
	t.Helper()
	f, err := scaling.Open(path, booted(&scaling.OpenOptions{ReadOnly: true}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return len(f.Stats().Filters)
}

// dirNames lists the names in dir.
func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestCompactLongChain: a chain of 45 filters compacted from the live keys
// becomes one filter holding every one of them, the removed keys are gone
// (up to the false-positive rate), and ids still route Removes.
func TestCompactLongChain(t *testing.T) {
	const capy, n = 100, 4500
	dir := t.TempDir()
	path := chainFile(t, dir, capy, n)
	removed := func(i int) bool { return i%3 == 0 }
	f, err := scaling.Open(path, booted(&scaling.OpenOptions{}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	for i := 3; i <= n; i += 3 {
		if err := f.Remove(key(i), uint64(i)); err != nil {
			t.Fatalf("remove %d: %v", i, err)
		}
	}
	before := len(f.Stats().Filters)
	f.Flush()
	f.Close()
	if before < 40 {
		t.Fatalf("the chain has %d filters, want 40 or more", before)
	}

	live := func(i int) bool { return !removed(i) }
	rep, err := Compact(path, liveSource(n, live), booted(&CompactOptions{}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compacted: %+v", *rep)
	want := uint64(n - n/3)
	if rep.FiltersBefore != before || rep.FiltersAfter != 1 || rep.Counted != want || rep.Keys != want ||
		rep.Capacity != want+want/10 || rep.FirstID != 0 || rep.LastID != header.MaxID || rep.SizeAfter >= rep.SizeBefore {
		t.Errorf("report %+v", *rep)
	}
	if r := verifyT(t, path); r.State != Clean || len(r.Filters) != 1 || r.Params.Seed != 42 || r.Params.GrowthFactor != 1 ||
		r.Params.TighteningRatio != 0.9 || r.Params.LayoutID != uint32(counting4.Blocked512) || r.Params.Capacity != rep.Capacity {
		dumpReport(t, r)
		t.Fatalf("after compact: %s, %d filters, params %+v", r.State, len(r.Filters), r.Params)
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{"s.dbl"}) {
		t.Errorf("the directory holds %v", got)
	}

	f, err = scaling.Open(path, booted(&scaling.OpenOptions{}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fp := 0
	for i := 1; i <= n; i++ {
		switch has := f.Contains(key(i)); {
		case live(i) && !has:
			t.Fatalf("key %d of the source is absent after compact", i)
		case !live(i) && has:
			fp++
		}
	}
	// The one filter's target is 0.01·(1-0.9) = 0.001.
	if fp > 10 {
		t.Errorf("%d of %d removed keys still present", fp, n/3)
	}
	for i := 1; i <= n; i += 50 {
		if !live(i) {
			continue
		}
		if err := f.Remove(key(i), uint64(i)); err != nil {
			t.Fatalf("remove %d after compact: %v", i, err)
		}
		if err := f.Remove(key(i+1), uint64(n+10)); !errors.Is(err, scaling.ErrNotPresent) {
			t.Fatalf("remove %d with an id outside every range: %v", i+1, err)
		}
	}
	if err := f.Add([]byte("new"), n+1); err != nil {
		t.Fatal(err)
	}
	if s := f.Stats(); len(s.Filters) != 1 {
		t.Errorf("%d filters after an Add, want 1 (the headroom)", len(s.Filters))
	}
}

// TestCompactBusy: Compact refuses while any handle has a file without
// FlagLiveReplace open, read-only ones included, and leaves it as it was.
// (A file with the flag is compacted while open: TestRewriteLive.)
func TestCompactBusy(t *testing.T) {
	dir := t.TempDir()
	path := chainFile(t, dir, 100, 1000)
	withoutLiveReplace(t, path)
	for _, ro := range []bool{true, false} {
		f, err := scaling.Open(path, booted(&scaling.OpenOptions{ReadOnly: ro}, testBoot))
		if err != nil {
			t.Fatal(err)
		}
		sum := sum256(t, path) // a read-write Open claims a slot
		_, err = Compact(path, keysSource(1000), booted(&CompactOptions{}, testBoot))
		if !errors.Is(err, ErrBusy) || !errors.Is(err, scaling.ErrBusy) {
			t.Fatalf("read-only %v: Compact with a handle open: %v, want ErrBusy", ro, err)
		}
		if sum256(t, path) != sum {
			t.Fatalf("read-only %v: a refused Compact changed the file", ro)
		}
		f.Close()
		if got := dirNames(t, dir); !slices.Equal(got, []string{"s.dbl"}) {
			t.Errorf("the directory holds %v", got)
		}
	}
	// With Wait, it waits for the handle to go.
	f, err := scaling.Open(path, booted(&scaling.OpenOptions{ReadOnly: true}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(100*time.Millisecond, func() { f.Close() })
	rep, err := Compact(path, keysSource(1000), booted(&CompactOptions{Wait: 5 * time.Second}, testBoot))
	if err != nil || rep.FiltersAfter != 1 {
		t.Fatalf("Compact with Wait: %v", err)
	}
}

// TestCompactSourceFails: a Source that fails (while counting, or while the
// keys are added), or an Add that fails, leaves the original file
// byte-identical and no temporary file behind.
func TestCompactSourceFails(t *testing.T) {
	dir := t.TempDir()
	const n = 3000
	path := chainFile(t, dir, 100, n)
	sum := sum256(t, path)
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		src  Source
		want error
	}{
		{"counting", failingSource(n, 0, n/2, boom), boom},
		{"adding", failingSource(n, 1, n/2, boom), boom},
		{"adding at the end", failingSource(n, 1, n, boom), boom},
		{"bad id", func(lo, hi uint64, add func([]byte, uint64) error) error {
			if err := keysSource(n)(lo, hi, add); err != nil {
				return err
			}
			return add([]byte("x"), 1<<63)
		}, scaling.ErrInvalidID},
	} {
		_, err := Compact(path, tc.src, booted(&CompactOptions{LastID: 1<<63 - 1}, testBoot))
		if !errors.Is(err, tc.want) {
			t.Fatalf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if tc.want == boom && !errors.Is(err, ErrCompactSource) {
			t.Errorf("%s: %v does not wrap ErrCompactSource", tc.name, err)
		}
		if sum256(t, path) != sum {
			t.Fatalf("%s: the failed Compact changed the file", tc.name)
		}
		if got := dirNames(t, dir); !slices.Equal(got, []string{"s.dbl"}) {
			t.Fatalf("%s: the directory holds %v", tc.name, got)
		}
	}
	if _, err := Compact(path, nil, nil); !errors.Is(err, ErrNoSource) {
		t.Errorf("no source: %v", err)
	}
	if r := verifyT(t, path); r.State != Clean || len(r.Filters) != n/100 {
		t.Errorf("after the failures: %s, %d filters", r.State, len(r.Filters))
	}
}

// failingSource is keysSource(n) that fails with err at the key number at
// of its call number call.
func failingSource(n, call, at int, err error) Source {
	calls := 0
	return func(lo, hi uint64, add func([]byte, uint64) error) error {
		c := calls
		calls++
		for i := 1; i <= n; i++ {
			if c == call && i == at {
				return err
			}
			if e := add(key(i), uint64(i)); e != nil {
				return e
			}
		}
		return nil
	}
}

// TestCompactCapacity: CompactOptions.Capacity skips the counting pass;
// a Source that yields more than that grows the new chain.
func TestCompactCapacity(t *testing.T) {
	dir := t.TempDir()
	path := chainFile(t, dir, 100, 3000)
	calls := 0
	src := func(lo, hi uint64, add func([]byte, uint64) error) error {
		calls++
		return keysSource(3000)(lo, hi, add)
	}
	rep, err := Compact(path, src, booted(&CompactOptions{Capacity: 2000}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 || rep.Counted != 0 || rep.Keys != 3000 || rep.Capacity != 2000 || rep.FiltersAfter != 2 {
		t.Errorf("%d calls, report %+v", calls, *rep)
	}
	// A small count gets MinCompactCapacity; Headroom < 0 is none.
	rep, err = Compact(path, keysSource(10), booted(&CompactOptions{}, testBoot))
	if err != nil || rep.Capacity != MinCompactCapacity {
		t.Fatalf("%v %+v", err, rep)
	}
	rep, err = Compact(path, keysSource(2000), booted(&CompactOptions{Headroom: -1}, testBoot))
	if err != nil || rep.Capacity != 2000 || rep.FiltersAfter != 1 {
		t.Fatalf("%v %+v", err, rep)
	}
	if r := verifyT(t, path); r.State != Clean || r.Filters[0].Items != 2000 {
		t.Errorf("%s, %d items", r.State, r.Filters[0].Items)
	}
}

// TestCompactRetired: after RetireBefore, Compact asks the Source for every
// id unless FirstID names the window's cut; a key added late (an id below
// the oldest range left, but at or above the cut) survives the default.
func TestCompactRetired(t *testing.T) {
	dir := t.TempDir()
	path := chainFile(t, dir, 100, 1000)
	f, err := scaling.Open(path, booted(&scaling.OpenOptions{}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	n, err := f.RetireBefore(451)
	if err != nil || n != 4 {
		t.Fatalf("RetireBefore: %d, %v", n, err)
	}
	// Id 460 is below the ranges left (501 on) and above the cut: a late Add.
	late := []byte("late-key")
	if err := f.Add(late, 460); err != nil {
		t.Fatal(err)
	}
	f.Flush()
	f.Close()
	src := func(first, last uint64, add func([]byte, uint64) error) error {
		if err := keysSource(1000)(first, last, add); err != nil {
			return err
		}
		if first <= 460 && 460 <= last {
			return add(late, 460)
		}
		return nil
	}
	copyPath := filepath.Join(dir, "copy.dbl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copyPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Compact(path, src, booted(&CompactOptions{}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	if rep.FirstID != 0 || rep.Keys != 1001 || rep.FiltersBefore != 6 || rep.FiltersAfter != 1 {
		t.Errorf("default range: report %+v", *rep)
	}
	rep, err = Compact(copyPath, src, booted(&CompactOptions{FirstID: 451}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	if rep.FirstID != 451 || rep.Keys != 551 || rep.FiltersAfter != 1 {
		t.Errorf("FirstID 451: report %+v", *rep)
	}
	for _, p := range []string{path, copyPath} {
		g, err := scaling.Open(p, booted(&scaling.OpenOptions{ReadOnly: true}, testBoot))
		if err != nil {
			t.Fatal(err)
		}
		found := g.Contains(late)
		g.Close()
		if !found {
			t.Fatalf("%s: the late key (id 460, cut 451) was lost by Compact", p)
		}
	}
}

// TestCompactLeftovers: Compact removes the temporary files a crashed
// Compact of the same file left, and nothing else.
func TestCompactLeftovers(t *testing.T) {
	dir := t.TempDir()
	path := chainFile(t, dir, 100, 500)
	stale := []string{".s.dbl.compact-0123456789abcdef", "..s.dbl.compact-0123456789abcdef.new-fedcba9876543210"}
	keep := []string{".s.dbl.compact-xyz", ".s.dbl.repair-123", ".t.dbl.compact-0123456789abcdef",
		".s.dbl.compact-x.compact-0123456789abcdef", "s.dbl.compact-0123456789abcdef"}
	for _, name := range append(stale, keep...) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Compact(path, keysSource(500), booted(&CompactOptions{}, testBoot)); err != nil {
		t.Fatal(err)
	}
	want := append([]string{"s.dbl"}, keep...)
	slices.Sort(want)
	if got := dirNames(t, dir); !slices.Equal(got, want) {
		t.Errorf("the directory holds %v, want %v", got, want)
	}
}

// compactKill is TestCompactKillChild's process; its environment variables
// start with DABLOOMS_COMPACT_.
var compactKill = childproc.Family{Test: "TestCompactKillChild", Prefix: "DABLOOMS_COMPACT_"}

const compactKillKeys = 60_000

// TestCompactKillChild is the process of TestCompactKill: it compacts the
// file, storing 1 in word 0 of the shared log before it starts and 2 once
// it is done.
func TestCompactKillChild(t *testing.T) {
	compactKill.Child(t)
	lg, err := childproc.MapShm(compactKill.Env("LOG"), 1, false)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	lg.Store(0, 1)
	if _, err := Compact(compactKill.Env("PATH"), keysSource(compactKillKeys), booted(&CompactOptions{}, testBoot)); err != nil {
		t.Fatal(err)
	}
	lg.Store(1, uint64(time.Since(start)))
	lg.Store(0, 2)
	if compactKill.Env("EXIT") != "" {
		return
	}
	time.Sleep(time.Hour) // wait for the kill
}

// TestCompactKill: a process running Compact is SIGKILLed at random
// moments; the path then holds the old file or the compacted one, either
// clean and holding every key, and the next Compact leaves no temporary
// file behind.
func TestCompactKill(t *testing.T) {
	if raceEnabled {
		t.Skip("timing of the kills; the race detector slows the child too much to matter")
	}
	trials := 8
	if testing.Short() {
		trials = 3
	}
	trials = envInt("DABLOOMS_COMPACT_TRIALS", trials)
	template := filepath.Join(t.TempDir(), "s.dbl")
	os.Rename(chainFile(t, filepath.Dir(template), 1500, compactKillKeys), template)
	tb, err := os.ReadFile(template)
	if err != nil {
		t.Fatal(err)
	}
	filtersBefore := verifyT(t, template).Filters
	// How long a compaction takes in a child, measured from where the
	// kills are timed, to kill inside one.
	runChild := func(trial int, exit bool) (path string, p *childproc.Proc, lg *childproc.Shm) {
		dir := t.TempDir()
		path = filepath.Join(dir, "s.dbl")
		if err := os.WriteFile(path, tb, 0o644); err != nil {
			t.Fatal(err)
		}
		lg, err := childproc.MapShm(filepath.Join(t.TempDir(), "log"), 2, true)
		if err != nil {
			t.Fatal(err)
		}
		env := []string{childproc.KV("PATH", path), childproc.KV("LOG", lg.Name())}
		if exit {
			env = append(env, childproc.KV("EXIT", 1))
		}
		p = compactKill.Start(t, fmt.Sprintf("trial %d", trial), "compact", env...)
		childproc.Await(t, p, func() bool { return lg.Load(0) >= 1 })
		return path, p, lg
	}
	_, p, lg := runChild(-1, true)
	childproc.WaitAll(t, nil, []*childproc.Proc{p}, time.Minute)
	dur := time.Duration(lg.Load(1))
	lg.Close()
	t.Logf("one compaction of %d filters, %d keys in a child: %v", len(filtersBefore), compactKillKeys, dur)

	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	outcomes := map[string]int{}
	all := make([][]byte, compactKillKeys)
	for i := range all {
		all[i] = key(i + 1)
	}
	out := make([]bool, len(all))
	for trial := range trials {
		path, p, lg := runChild(trial, false)
		dir := filepath.Dir(path)
		switch trial {
		case 0: // at once
		case trials - 1: // after the rename: both outcomes are checked
			childproc.Await(t, p, func() bool { return lg.Load(0) == 2 })
		default: // up to 1.2 times the compaction: a few land after it
			time.Sleep(time.Duration(rng.Int63n(int64(dur) * 12 / 10)))
		}
		p.Cmd.Process.Signal(syscall.SIGKILL)
		<-p.Done
		finished := lg.Load(0) == 2
		lg.Close()
		if p.Out.Len() > 0 {
			t.Logf("trial %d: the child wrote:\n%s", trial, p.Out)
		}

		r := verifyT(t, path)
		if r.State != Clean || r.Err() != nil {
			dumpReport(t, r)
			t.Fatalf("trial %d: after the kill the file is %s", trial, r.State)
		}
		outcome := "old"
		switch {
		case len(r.Filters) == 1:
			outcome = "compacted"
		case finished:
			t.Fatalf("trial %d: the Compact returned, and the path holds %d filters", trial, len(r.Filters))
		case len(r.Filters) != len(filtersBefore):
			t.Fatalf("trial %d: %d filters, neither the old file nor the new", trial, len(r.Filters))
		}
		leftovers := len(dirNames(t, dir)) - 1
		outcomes[fmt.Sprintf("%s, %d temporary file(s) left", outcome, leftovers)]++
		f, err := scaling.Open(path, booted(&scaling.OpenOptions{ReadOnly: true}, testBoot))
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		f.ContainsBatch(all, out)
		f.Close()
		if i := slices.Index(out, false); i >= 0 {
			t.Fatalf("trial %d (%s): key %d is absent", trial, outcome, i+1)
		}
		// The next Compact cleans up.
		if _, err := Compact(path, keysSource(compactKillKeys), booted(&CompactOptions{}, testBoot)); err != nil {
			t.Fatalf("trial %d: compact after the kill: %v", trial, err)
		}
		if got := dirNames(t, dir); !slices.Equal(got, []string{"s.dbl"}) {
			t.Fatalf("trial %d: after another Compact the directory holds %v", trial, got)
		}
	}
	t.Logf("%d trials: %v", trials, outcomes)
}

// TestCompactChunk: Compact's batches are a 64th of the capacity, within
// 4096 and 16M keys.
func TestCompactChunk(t *testing.T) {
	for _, tc := range []struct {
		capacity uint64
		want     int
	}{
		{0, 4096}, {1024, 4096}, {64 * 4096, 4096}, {64*4096 + 64, 4097}, {1e8, 1562500},
		{1e9, 15625000}, {1e10, 1 << 24}, {1 << 62, 1 << 24},
	} {
		if got := compactChunk(tc.capacity); got != tc.want {
			t.Errorf("compactChunk(%d) = %d, want %d", tc.capacity, got, tc.want)
		}
	}
}
