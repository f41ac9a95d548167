package scaling

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/childproc"
)

// The sliding window across processes: ids are hours, writer processes
// add each hour's events with the hour as id and retire (RetireBefore,
// several processes at once) what lies below the window, while a
// read-only process looks up every key of the window. Far more filters
// than a directory holds pass through the ring.
//
// Progress: writer p stores in word winProgress(p) the number of its keys
// whose Add has returned (hour h, event j is key h·PerHour+j), so hour h is
// complete for p once the word reaches (h+1)·PerHour; m, the minimum over
// the writers of the complete hours, is the first hour not complete
// everywhere. A writer starts hour h once m ≥ h−Lag (the writers drift at
// most Lag hours apart, so the slower ones' Adds go late, below the
// frontier), and then retires below m−RetireWindow: the window of the
// hours every writer finished, [m−RetireWindow, m−1]. After its last hour
// it waits for the others and retires below Hours−RetireWindow.
//
// The checker (a read-only handle) reads the progress words, then looks up
// keys of hour m−Window and above whose Add had returned (each new one,
// and every key of the window again every winStripes passes; the last
// pass, once the writers have exited, all), then reads m again (m'): a
// key not found with hour ≥ m'−Window is a false negative, since no
// retirement begun before the lookup ended cut above m'−Window (the
// writers' cuts use an m read earlier). A miss below is excused (retired
// during the lookup). With RetireWindow < Window (the negative control)
// the writers retire keys the checker still counts as inside the window,
// and it must report them.
//
// Bounds. At any time let h* be the highest hour begun and c =
// h*−Lag−RetireWindow: the writer of h* retired below c or higher (or saw
// nothing to retire) before its first Add of h*, and no filter made since
// ends below c. The live filters are then the first one (ending at c or above; it may
// hold older keys), the newest, and sealed filters between them, each with
// at least Capacity−Writers items (a growth counts the Adds admitted, of
// which at most one per writer, capacity < 512 admits one at a time, may
// be turned away). Their keys have hours in [c−Lag, h*]: ids in their
// ranges lie above the first filter's last id (≥ c), and a late Add goes
// to the newest filter with an id at most the previous filter's last id
// but, from a writer at most Lag hours behind, at least h*−Lag then, which
// is at least that last id − Lag. So the chain holds at most
// Writers·PerHour·(RetireWindow+2·Lag+1)/(Capacity−Writers) + 2 filters:
// winChainBound. A new filter takes the lowest free directory entry (<
// that bound) and the first gap between the live filters large enough,
// else the place after the last: every gap below that place is smaller
// than the filter, and there is at most one gap per live filter, so the
// file never exceeds the data offset plus (2·chain bound − 1) times the
// largest filter of those entries: winFileBound. Neither depends on Hours.

// windowChildren are the roles of TestMPWindowChild (their environment
// variables start with DABLOOMS_MPW_): "wwriter" and "wchecker".
var windowChildren = childproc.Family{Test: "TestMPWindowChild", Prefix: "DABLOOMS_MPW_"}

// winStripes: the checker looks up a key of the window again every
// winStripes passes (not every pass: it would take more of the CPU).
const winStripes = 4

// Control words.
const (
	winCheckerOpen = 16 // set by the checker once it has opened the file
	winWritersDone = 24 // set by the parent once every writer has exited
)

// winProgress is the word of writer p's count of returned Adds (one cache
// line each).
func winProgress(p int) int { return 64 + 8*p }

// winKey is event j of hour h of writer p.
func winKey(p, h, j int) []byte { return fmt.Appendf(nil, "win-%d-%d-%d", p, h, j) }

type winParams struct {
	Writers, Hours, PerHour int
	Window                  int // the checker's window, in hours
	RetireWindow            int // the writers' window (the control: smaller)
	Lag                     int // how many hours a writer may run ahead of the slowest
	Capacity                uint64
}

type winWriterReport struct {
	Retired      int // filters this writer's RetireBefore calls retired
	Retirements  int // calls that retired some
	Calls        int
	MaxChain     int           // the longest chain this writer's handle held
	LateIndexMax int           // filters with a late-add index allocated, at most
	Skipped      int           // hours whose retirement Stats showed to have nothing to do
	WaitTime     time.Duration // waiting for the slower writers
	RetireTime   time.Duration // in RetireBefore
	AddTime      time.Duration // in Add
}

type winMiss struct{ P, H, J int }

type winCheckReport struct {
	Checks, Rounds int
	FalseNeg       int // keys inside the window that were not found
	Excused        int // misses retired while the lookup ran
	First          []string
	FinalChecks    int // lookups of the last pass, after every writer exited
	FinalFalseNeg  int
	MaxChain       int   // the longest chain the read-only handle held
	MaxFileSize    int64 // the largest file size seen (os.Stat)
	SizeAt100      int64 // the file size once every writer had finished hour 100
	MaxRetired     uint64
}

// TestMPWindowChild is the entry point of the window test's children; it
// does nothing unless DABLOOMS_MPW_CHILD names a role.
func TestMPWindowChild(t *testing.T) {
	role := windowChildren.Child(t)
	var wp winParams
	err := json.Unmarshal([]byte(windowChildren.Env("PARAMS")), &wp)
	if err == nil {
		switch role {
		case "wwriter":
			err = childWindowWriter(&wp)
		case "wchecker":
			err = childWindowChecker(&wp)
		default:
			err = fmt.Errorf("unknown child role %q", role)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "child %s (pid %d): %v\n", role, os.Getpid(), err)
		os.Exit(2)
	}
}

// winMinHours is m: the first hour that some writer has not finished.
func winMinHours(ctl *childproc.Shm, wp *winParams) int {
	m := wp.Hours
	for p := range wp.Writers {
		m = min(m, int(ctl.Load(winProgress(p)))/wp.PerHour)
	}
	return m
}

// winWaitHours waits until every writer has finished the hours below h.
func winWaitHours(ctl *childproc.Shm, wp *winParams, h int) (int, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		m := winMinHours(ctl, wp)
		if m >= h {
			return m, nil
		}
		if ctl.Load(childproc.CtlAbort) != 0 {
			return 0, fmt.Errorf("aborted by the parent (another child failed)")
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("waiting for hour %d: the writers finished only %d hours", h, m)
		}
		time.Sleep(20 * time.Microsecond)
	}
}

func childWindowWriter(wp *winParams) error {
	ctl, err := childproc.MapShm(windowChildren.Env("CTL"), childproc.CtlWords, false)
	if err != nil {
		return err
	}
	f, err := Open(windowChildren.Env("PATH"), nil)
	if err != nil {
		return err
	}
	defer f.Close()
	p := windowChildren.EnvInt("PROC")
	var rep winWriterReport
	// retire cuts below the window of the m hours every writer finished.
	// When the oldest filter ends at or above the cut (Stats: lock-free)
	// there is nothing to retire and it does not call RetireBefore, which
	// takes the growth lock even then; concurrent calls remain, as every
	// writer sees the same m.
	retire := func(m int) error {
		cut := m - wp.RetireWindow
		if cut <= 0 {
			return nil
		}
		if st := f.Stats(); len(st.Filters) > 0 && st.Filters[0].FirstID <= st.Filters[0].LastID && st.Filters[0].LastID >= uint64(cut) {
			rep.Skipped++
			return nil
		}
		t0 := time.Now()
		n, err := f.RetireBefore(uint64(cut))
		rep.RetireTime += time.Since(t0)
		if err != nil {
			return fmt.Errorf("RetireBefore(%d): %w", cut, err)
		}
		rep.Calls++
		if n > 0 {
			rep.Retired += n
			rep.Retirements++
		}
		return nil
	}
	for h := range wp.Hours {
		t0 := time.Now()
		m, err := winWaitHours(ctl, wp, h-wp.Lag)
		rep.WaitTime += time.Since(t0)
		if err != nil {
			return err
		}
		if err := retire(m); err != nil {
			return fmt.Errorf("hour %d: %w", h, err)
		}
		t1 := time.Now()
		for j := range wp.PerHour {
			if err := f.Add(winKey(p, h, j), uint64(h)); err != nil {
				return fmt.Errorf("hour %d event %d: %w", h, j, err)
			}
			ctl.Store(winProgress(p), uint64(h*wp.PerHour+j+1))
		}
		rep.AddTime += time.Since(t1)
		c := f.chain.Load()
		rep.MaxChain = max(rep.MaxChain, len(c.f))
		late := 0
		for _, mb := range c.f {
			if mb.indexAllocated() {
				late++
			}
		}
		rep.LateIndexMax = max(rep.LateIndexMax, late)
	}
	if _, err := winWaitHours(ctl, wp, wp.Hours); err != nil {
		return err
	}
	if err := retire(wp.Hours); err != nil {
		return fmt.Errorf("the last retirement: %w", err)
	}
	b, err := json.Marshal(&rep)
	if err != nil {
		return err
	}
	return os.WriteFile(windowChildren.Env("REPORT"), b, 0o644)
}

func childWindowChecker(wp *winParams) error {
	ctl, err := childproc.MapShm(windowChildren.Env("CTL"), childproc.CtlWords, false)
	if err != nil {
		return err
	}
	path := windowChildren.Env("PATH")
	f, err := Open(path, &OpenOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer f.Close()
	ctl.Store(winCheckerOpen, 1)
	var rep winCheckReport
	done := make([]int, wp.Writers)
	seen := make([]int, wp.Writers) // keys below were looked up in an earlier pass
	var misses []winMiss
	// pass looks up the keys of hour m−Window and above whose Add had
	// returned before it began: all of them, or (all false) those it has
	// not looked up before and one stripe of winStripes of the others, so
	// that each is looked up again every winStripes passes while it is in
	// the window. It returns how many it looked up and how many of them
	// are false negatives.
	pass := func(all bool) (checks, falseNeg int, err error) {
		m := wp.Hours
		for p := range wp.Writers {
			done[p] = int(ctl.Load(winProgress(p))) // BEFORE the lookups
			m = min(m, done[p]/wp.PerHour)
		}
		misses = misses[:0]
		for p := range wp.Writers {
			for k := max(0, m-wp.Window) * wp.PerHour; k < done[p]; k++ {
				if !all && k < seen[p] && k%winStripes != rep.Rounds%winStripes {
					continue
				}
				h, j := k/wp.PerHour, k%wp.PerHour
				checks++
				if !f.Contains(winKey(p, h, j)) {
					misses = append(misses, winMiss{p, h, j})
				}
			}
			seen[p] = done[p]
		}
		m2 := winMinHours(ctl, wp) // AFTER the lookups
		for _, ms := range misses {
			if ms.H < m2-wp.Window {
				rep.Excused++
				continue
			}
			falseNeg++
			if len(rep.First) < 10 {
				rep.First = append(rep.First, fmt.Sprintf("writer %d hour %d event %d (window from hour %d; chain of %d from %d retired)",
					ms.P, ms.H, ms.J, m2-wp.Window, len(f.chain.Load().f), f.chain.Load().base))
			}
		}
		c := f.chain.Load()
		rep.MaxChain = max(rep.MaxChain, len(c.f))
		rep.MaxRetired = max(rep.MaxRetired, c.base)
		fi, err := os.Stat(path)
		if err != nil {
			return 0, 0, err
		}
		rep.MaxFileSize = max(rep.MaxFileSize, fi.Size())
		if rep.SizeAt100 == 0 && m >= 100 {
			rep.SizeAt100 = fi.Size()
		}
		return checks, falseNeg, nil
	}
	for ctl.Load(winWritersDone) == 0 {
		n, fn, err := pass(false)
		if err != nil {
			return err
		}
		rep.Checks += n
		rep.FalseNeg += fn
		rep.Rounds++
		// Leave the writers most of the CPU (two cores, four processes).
		time.Sleep(100 * time.Microsecond)
	}
	// Every writer has exited: the last pass looks up the whole last window.
	n, fn, err := pass(true)
	if err != nil {
		return err
	}
	rep.FinalChecks, rep.FinalFalseNeg = n, fn
	rep.Checks += n
	rep.FalseNeg += fn
	b, err := json.Marshal(&rep)
	if err != nil {
		return err
	}
	return os.WriteFile(windowChildren.Env("REPORT"), b, 0o644)
}

// winChainBound is the most filters the chain can hold (see the top of
// the file).
func winChainBound(wp *winParams) int {
	keys := wp.Writers * wp.PerHour * (wp.RetireWindow + 2*wp.Lag + 1)
	return keys/(int(wp.Capacity)-wp.Writers) + 2
}

// winFileBound is the largest the file can grow (see the top of the file).
func winFileBound(t *testing.T, p *header.Params, chain int) int64 {
	var largest int64
	for e := range chain {
		d, err := describe(p, e, 0, 0, true, true)
		if err != nil {
			t.Fatal(err)
		}
		largest = max(largest, d.Length)
	}
	return header.DataOffset + int64(2*chain-1)*largest
}

type winRun struct {
	path    string
	params  header.Params
	writers []winWriterReport
	check   winCheckReport
	elapsed time.Duration
}

func runWindow(t *testing.T, wp winParams) *winRun {
	requireFiles(t)
	dir := t.TempDir()
	run := &winRun{path: filepath.Join(dir, "window.dbl")}
	ctl := createForChildren(t, run.path, &Options{Capacity: wp.Capacity, GrowthFactor: 1}, filepath.Join(dir, "ctl"))
	b, err := json.Marshal(&wp)
	if err != nil {
		t.Fatal(err)
	}
	env := []string{childproc.KV("PATH", run.path), childproc.KV("CTL", ctl.Name()), childproc.KV("PARAMS", string(b))}
	start := time.Now()
	checkRep := filepath.Join(dir, "checker.json")
	checker := windowChildren.Start(t, "checker", "wchecker", append(env, childproc.KV("REPORT", checkRep))...)
	// The writers start once the checker has opened the file (an Open
	// racing a writer's first dirty mark is TestMPOpenDuringFirstMark's).
	childproc.Await(t, checker, func() bool { return ctl.Load(winCheckerOpen) != 0 })
	var writers []*childproc.Proc
	for p := range wp.Writers {
		writers = append(writers, windowChildren.Start(t, fmt.Sprintf("writer-%d", p), "wwriter",
			append(env, childproc.KV("PROC", p), childproc.KV("REPORT", filepath.Join(dir, fmt.Sprintf("writer-%d.json", p))))...))
	}
	childproc.WaitAll(t, ctl, writers, 2*time.Minute)
	ctl.Store(winWritersDone, 1)
	childproc.WaitAll(t, ctl, []*childproc.Proc{checker}, time.Minute)
	run.elapsed = time.Since(start)
	read := func(name string, v any) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	read("checker.json", &run.check)
	run.writers = make([]winWriterReport, wp.Writers)
	for p := range run.writers {
		read(fmt.Sprintf("writer-%d.json", p), &run.writers[p])
	}
	run.params = readMetaOf(t, run.path).Params
	return run
}

// TestMPWindow: three writer processes add 1,000 hours of 35 events each
// with the hour as id (a filter of capacity 250 every 2.4 hours, about 400
// of them) and retire what lies below an 8-hour window, all of them,
// concurrently, while a read-only process looks up the window. No key of
// the window is ever missing, no Add fails (the ring never fills), the
// chain and the file stay within bounds that do not depend on the hours,
// and the reopened file holds the last window and forgets the rest.
func TestMPWindow(t *testing.T) {
	wp := winParams{Writers: 3, Hours: 1000, PerHour: 35, Window: 8, RetireWindow: 8, Lag: 2, Capacity: 250}
	run := runWindow(t, wp)
	rc := run.check
	chainBound := winChainBound(&wp)
	fileBound := winFileBound(t, &run.params, chainBound)
	retired, retirers, maxChain, maxLate := 0, 0, rc.MaxChain, 0
	var calls []int
	for _, w := range run.writers {
		retired += w.Retired
		if w.Retirements > 0 {
			retirers++
		}
		calls = append(calls, w.Retirements)
		t.Logf("writer: %d RetireBefore calls (%d retired some, %d hours skipped) in %v; Adds %v; waiting %v",
			w.Calls, w.Retirements, w.Skipped, w.RetireTime.Round(time.Millisecond), w.AddTime.Round(time.Millisecond), w.WaitTime.Round(time.Millisecond))
		maxChain = max(maxChain, w.MaxChain)
		maxLate = max(maxLate, w.LateIndexMax)
	}
	t.Logf("%d writers × %d hours × %d events, window %d, lag %d, capacity %d: %v", wp.Writers, wp.Hours, wp.PerHour, wp.Window, wp.Lag, wp.Capacity, run.elapsed.Round(time.Millisecond))
	t.Logf("checker: %d lookups in %d rounds (last pass %d), %d false negatives, %d misses excused (retired during the lookup)",
		rc.Checks, rc.Rounds, rc.FinalChecks, rc.FalseNeg, rc.Excused)
	t.Logf("%d filters retired (retirements per writer %v); chain at most %d (bound %d), filters with late Adds at most %d; file %d bytes at hour 100, at most %d (bound %d)",
		retired, calls, maxChain, chainBound, maxLate, rc.SizeAt100, rc.MaxFileSize, fileBound)
	if rc.FalseNeg != 0 {
		t.Errorf("%d false negatives (%d in the last pass), first: %v", rc.FalseNeg, rc.FinalFalseNeg, rc.First)
	}
	if rc.Rounds < 10 || rc.FinalChecks != wp.Writers*wp.PerHour*wp.Window {
		t.Errorf("the checker made %d rounds and looked up %d keys in its last pass, want ≥ 10 and %d", rc.Rounds, rc.FinalChecks, wp.Writers*wp.PerHour*wp.Window)
	}
	if retirers < 2 {
		t.Errorf("only %d writer processes retired filters (%v): RetireBefore did not run from several processes", retirers, calls)
	}
	if maxChain > chainBound {
		t.Errorf("the chain reached %d filters, bound %d", maxChain, chainBound)
	}
	if rc.MaxFileSize > fileBound {
		t.Errorf("the file reached %d bytes, bound %d", rc.MaxFileSize, fileBound)
	}
	if maxLate == 0 {
		t.Errorf("no filter took a late Add: the writers never drifted apart")
	}

	// The file, reopened: consistent with what the writers did.
	f, err := Open(run.path, &OpenOptions{AllowUnclean: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if c := f.Condition(); c != Clean {
		t.Errorf("condition %v after a flush with no writer left", c)
	}
	st := f.Stats()
	if st.Retired != uint64(retired) || st.Retired != rc.MaxRetired {
		t.Errorf("%d filters retired in the file, the writers' RetireBefore calls returned %d, the checker saw %d", st.Retired, retired, rc.MaxRetired)
	}
	if st.Retired < 5*header.MaxFilters {
		t.Errorf("only %d filters retired: the ring did not go round", st.Retired)
	}
	if len(st.Filters) > chainBound {
		t.Errorf("%d filters left, bound %d", len(st.Filters), chainBound)
	}
	fi, err := os.Stat(run.path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != st.FileSize || fi.Size() > fileBound {
		t.Errorf("file %d bytes, Stats says %d, bound %d", fi.Size(), st.FileSize, fileBound)
	}
	cut := uint64(wp.Hours - wp.RetireWindow)
	var entries uint64
	var end, items int64
	for i, fs := range st.Filters {
		if fs.Index >= chainBound || entries&(1<<fs.Index) != 0 {
			t.Errorf("filter %d: directory entry %d (used: %b, bound %d)", i, fs.Index, entries, chainBound)
		}
		entries |= 1 << fs.Index
		if fs.Offset < header.DataOffset || fs.Offset+fs.Bytes > st.FileSize {
			t.Errorf("filter %d at [%d, %d) outside the file's data [%d, %d)", i, fs.Offset, fs.Offset+fs.Bytes, header.DataOffset, st.FileSize)
		}
		for _, gs := range st.Filters[:i] {
			if fs.Offset < gs.Offset+gs.Bytes && gs.Offset < fs.Offset+fs.Bytes {
				t.Errorf("filters %d and %d overlap", fs.Index, gs.Index)
			}
		}
		end = max(end, fs.Offset+fs.Bytes)
		items += int64(fs.Count)
		if i > 0 && fs.FirstID <= fs.LastID && fs.FirstID <= st.Filters[i-1].LastID {
			t.Errorf("filter %d's ids [%d, %d] are not above the previous one's (last %d)", i, fs.FirstID, fs.LastID, st.Filters[i-1].LastID)
		}
		if i == 0 && fs.LastID < cut {
			t.Errorf("the oldest filter's ids [%d, %d] lie below %d: it should have been retired", fs.FirstID, fs.LastID, cut)
		}
		if i < len(st.Filters)-1 && !fs.Sealed {
			t.Errorf("filter %d is not sealed though a newer one exists", i)
		}
	}
	if want := int64(wp.Writers * wp.PerHour * wp.RetireWindow); items < want || uint64(items) != st.Count {
		t.Errorf("the filters hold %d items (Stats: %d), want at least the last window's %d", items, st.Count, want)
	}
	if m := readMetaOf(t, run.path); m.Flags&header.FlagRing == 0 || m.Retired != st.Retired {
		t.Errorf("metadata: flags %#x, %d retired; Stats %d", m.Flags, m.Retired, st.Retired)
	}
	missing, gone, old := 0, 0, 0
	for p := range wp.Writers {
		for h := range wp.Hours {
			for j := range wp.PerHour {
				found := f.Contains(winKey(p, h, j))
				switch {
				case h >= int(cut) && !found:
					missing++
				case h < int(cut)-2*wp.Window:
					old++
					if !found {
						gone++
					}
				}
			}
		}
	}
	if missing != 0 {
		t.Errorf("reopened: %d keys of the last window missing", missing)
	}
	if gone < old*9/10 {
		t.Errorf("reopened: only %d of %d keys far below the window are gone", gone, old)
	}
	t.Logf("reopened: %d filters after %d retired, entries %b, %d items, file %d bytes (last filter ends at %d); %d of %d old keys gone",
		len(st.Filters), st.Retired, entries, items, st.FileSize, end, gone, old)
}

// TestMPWindowControl is the negative control of TestMPWindow: the writers
// retire below a 1-hour window while the checker looks up 8 hours, and it
// must report the keys the writers retired too early as missing.
func TestMPWindowControl(t *testing.T) {
	wp := winParams{Writers: 3, Hours: 150, PerHour: 35, Window: 8, RetireWindow: 1, Lag: 2, Capacity: 250}
	run := runWindow(t, wp)
	rc := run.check
	t.Logf("control: %d lookups in %d rounds, %d reported missing (%d of %d in the last pass), first %v; %v",
		rc.Checks, rc.Rounds, rc.FalseNeg, rc.FinalFalseNeg, rc.FinalChecks, rc.First[:min(3, len(rc.First))], run.elapsed.Round(time.Millisecond))
	// The last retirement cut below hour Hours−1. A filter spans about 2.4
	// hours of ids (Capacity over Writers·PerHour), and a key added late
	// lies at most Lag hours below its filter's range: every filter holding
	// keys of hour Hours−8 ends below Hours−3, retired.
	if rc.FinalFalseNeg < wp.Writers*wp.PerHour {
		t.Errorf("negative control: the last pass reported %d keys missing, want ≥ %d: the checker cannot see a false negative", rc.FinalFalseNeg, wp.Writers*wp.PerHour)
	}
}
