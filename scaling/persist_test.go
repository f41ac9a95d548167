package scaling_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/dablooms/dablooms/scaling"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

const (
	persistChildEnv     = "DABLOOMS_T2_CHILD"
	persistChildKeys    = 20_000
	persistChildAbsent  = 20_000
	persistChildRemoval = 7 // the child removes every 7th key
)

// persistChildReport is what the child writes next to the file it made.
type persistChildReport struct {
	Seed       uint64
	Mem, Disk  uint64
	Filters    int
	Count      uint64
	Present    []byte // '1' or '0': Contains(key-i) after the flush
	Absent     []byte // the same for absent-i
	Condition  string
	FlushError string
}

// TestPersistChild is the child process of TestPersistAcrossProcesses: it
// runs only when the parent re-executes the test binary with persistChildEnv set
// to a path. It creates the file (random seed), adds persistChildKeys keys with
// increasing ids (the chain grows), removes every 7th, flushes, writes its
// answers to path+".json" and exits without closing the filter.
func TestPersistChild(t *testing.T) {
	scaling.RequireFiles(t)
	path := os.Getenv(persistChildEnv)
	if path == "" {
		t.Skip("helper process of TestPersistAcrossProcesses")
	}
	fail := func(what string, err error) {
		os.Stderr.WriteString("child: " + what + ": " + err.Error() + "\n")
		os.Exit(2)
	}
	f, err := scaling.Create(path, &scaling.Options{Capacity: 4000, ErrorRate: 0.01})
	if err != nil {
		fail("create", err)
	}
	var buf []byte
	for i := range persistChildKeys {
		buf = scaling.MakeKey(buf, "key-", i)
		if err := f.Add(buf, uint64(i)); err != nil {
			fail("add", err)
		}
	}
	for i := 0; i < persistChildKeys; i += persistChildRemoval {
		buf = scaling.MakeKey(buf, "key-", i)
		if err := f.Remove(buf, uint64(i)); err != nil {
			fail("remove", err)
		}
	}
	rep := persistChildReport{Seed: f.Params().Seed}
	if err := f.Flush(); err != nil {
		rep.FlushError = err.Error()
	}
	for i := range persistChildKeys {
		rep.Present = append(rep.Present, "01"[boolInt(f.Contains(scaling.MakeKey(buf, "key-", i)))])
	}
	for i := range persistChildAbsent {
		rep.Absent = append(rep.Absent, "01"[boolInt(f.Contains(scaling.MakeKey(buf, "absent-", i)))])
	}
	st := f.Stats()
	rep.Mem, rep.Disk, rep.Filters, rep.Count, rep.Condition = f.MemSeqnum(), f.DiskSeqnum(), len(st.Filters), st.Count, f.Condition().String()
	b, err := json.Marshal(&rep)
	if err != nil {
		fail("marshal", err)
	}
	if err := os.WriteFile(path+".json", b, 0o644); err != nil {
		fail("write report", err)
	}
	os.Exit(0) // no Close: the process just ends (paniconexit0 is not set in the child)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestPersistAcrossProcesses: a file written and flushed by another process
// answers every query exactly as the writer saw it, read-write and
// read-only, with its seed, seqnums and condition.
func TestPersistAcrossProcesses(t *testing.T) {
	scaling.RequireFiles(t)
	path := filepath.Join(t.TempDir(), "child.dbl")
	cmd := exec.Command(os.Args[0], "-test.run=^TestPersistChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), persistChildEnv+"="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	b, err := os.ReadFile(path + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var rep persistChildReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.FlushError != "" {
		t.Fatalf("child's Flush: %s", rep.FlushError)
	}
	wantMem := uint64(persistChildKeys + (persistChildKeys+persistChildRemoval-1)/persistChildRemoval)
	if rep.Mem != wantMem || rep.Disk != wantMem || rep.Condition != "clean" {
		t.Fatalf("child saw mem %d disk %d %s, want %d %d clean", rep.Mem, rep.Disk, rep.Condition, wantMem, wantMem)
	}
	if rep.Filters < 3 {
		t.Fatalf("child's chain has %d filters, want growth (≥ 3)", rep.Filters)
	}
	for i := range persistChildKeys {
		if i%persistChildRemoval != 0 && rep.Present[i] != '1' {
			t.Fatalf("child: false negative for key %d", i)
		}
	}
	t.Logf("child: seed %#x, %d filters, %d items, mem = disk = %d", rep.Seed, rep.Filters, rep.Count, rep.Mem)

	before := scaling.Identify(t, path)
	for _, ro := range []bool{true, false} {
		f, err := scaling.Open(path, &scaling.OpenOptions{ReadOnly: ro})
		if err != nil {
			t.Fatalf("read-only %v: %v", ro, err)
		}
		st := f.Stats()
		if f.Params().Seed != rep.Seed || len(st.Filters) != rep.Filters || st.Count != rep.Count {
			t.Errorf("read-only %v: seed %#x, %d filters, %d items; child had %#x, %d, %d", ro, f.Params().Seed, len(st.Filters), st.Count, rep.Seed, rep.Filters, rep.Count)
		}
		if f.MemSeqnum() != rep.Mem || f.DiskSeqnum() != rep.Disk || f.Condition() != scaling.Clean {
			t.Errorf("read-only %v: mem %d disk %d %v, want %d %d clean", ro, f.MemSeqnum(), f.DiskSeqnum(), f.Condition(), rep.Mem, rep.Disk)
		}
		var buf []byte
		diff := 0
		for i := range persistChildKeys {
			if got := "01"[boolInt(f.Contains(scaling.MakeKey(buf, "key-", i)))]; got != rep.Present[i] {
				diff++
			}
		}
		for i := range persistChildAbsent {
			if got := "01"[boolInt(f.Contains(scaling.MakeKey(buf, "absent-", i)))]; got != rep.Absent[i] {
				diff++
			}
		}
		if diff != 0 {
			t.Errorf("read-only %v: %d of %d answers differ from the child's", ro, diff, persistChildKeys+persistChildAbsent)
		}
		if ro {
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if after := scaling.Identify(t, path); after != before {
				t.Fatal("a read-only open changed the file")
			}
			continue
		}
		// The reopened writer continues the child's count.
		if err := f.AddString("after-reopen", persistChildKeys); err != nil {
			t.Fatal(err)
		}
		if f.MemSeqnum() != rep.Mem+1 || f.DiskSeqnum() != 0 || f.Condition() != scaling.Unflushed {
			t.Errorf("after one more add: mem %d disk %d %v, want %d 0 unflushed", f.MemSeqnum(), f.DiskSeqnum(), f.Condition(), rep.Mem+1)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPersistSeqnums walks the sequence-number protocol through one
// handle: mem counts completed modifications, disk equals mem right after a
// Flush and is 0 after the next change, the condition follows.
func TestPersistSeqnums(t *testing.T) {
	scaling.RequireFiles(t)
	for _, mode := range []scaling.StoreMode{scaling.InFile, scaling.InMemory} {
		t.Run(string(mode), func(t *testing.T) {
			f, path := scaling.NewStore(t, mode, &scaling.Options{Capacity: 100, ErrorRate: 0.01, Seed: 9})
			check := func(when string, mem, disk uint64, c scaling.Condition) {
				t.Helper()
				if f.MemSeqnum() != mem || f.DiskSeqnum() != disk || f.Condition() != c {
					t.Fatalf("%s: mem %d disk %d %v, want %d %d %v", when, f.MemSeqnum(), f.DiskSeqnum(), f.Condition(), mem, disk, c)
				}
				st := f.Stats()
				if st.MemSeqnum != mem || st.DiskSeqnum != disk || st.Condition != c {
					t.Fatalf("%s: Stats mem %d disk %d %v, want %d %d %v", when, st.MemSeqnum, st.DiskSeqnum, st.Condition, mem, disk, c)
				}
			}
			check("new", 0, 0, scaling.Clean)
			const n = 250 // the chain grows twice on the way
			for i := range n {
				if err := f.AddString(scaling.KeyString("key-", i), uint64(i)); err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					check("first add", 1, 0, scaling.Unflushed)
				}
			}
			check("after adds", n, 0, scaling.Unflushed)
			if err := f.Flush(); err != nil { // the original's Go binding returned false here
				t.Fatalf("Flush: %v", err)
			}
			check("after flush", n, n, scaling.Clean)
			if err := f.Flush(); err != nil {
				t.Fatal(err)
			}
			check("after a second flush", n, n, scaling.Clean)

			// A Remove that finds nothing changes nothing, not even the state.
			absent := ""
			for i := 0; absent == ""; i++ {
				if k := scaling.KeyString("absent-", i); !f.ContainsString(k) {
					absent = k
				}
			}
			if err := f.RemoveString(absent, 3); !errors.Is(err, scaling.ErrNotPresent) {
				t.Fatalf("Remove of an absent key: %v", err)
			}
			check("after a failed remove", n, n, scaling.Clean)

			if err := f.RemoveString(scaling.KeyString("key-", 3), 3); err != nil {
				t.Fatal(err)
			}
			check("after a remove", n+1, 0, scaling.Unflushed)
			if err := f.AddString("one-more", 1000); err != nil {
				t.Fatal(err)
			}
			check("after an add", n+2, 0, scaling.Unflushed)
			if err := f.Flush(); err != nil {
				t.Fatal(err)
			}
			check("after the second flush", n+2, n+2, scaling.Clean)
			if mode == scaling.InMemory {
				return
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			g, err := scaling.Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			f = g
			check("reopened", n+2, n+2, scaling.Clean)
			if !f.ContainsString("one-more") || !f.ContainsString(scaling.KeyString("key-", n-1)) {
				t.Fatal("keys lost across reopen")
			}
			if err := f.AddString("after-reopen", 1001); err != nil {
				t.Fatal(err)
			}
			check("add after reopen", n+3, 0, scaling.Unflushed)
		})
	}
}

// TestPersistReadOnly: a read-only handle refuses changes with ErrReadOnly,
// answers Contains (also for keys and filters a writer adds meanwhile) and
// never writes to the file.
func TestPersistReadOnly(t *testing.T) {
	scaling.RequireFiles(t)
	path := filepath.Join(t.TempDir(), "ro.dbl")
	w, err := scaling.Create(path, &scaling.Options{Capacity: 100, ErrorRate: 0.01, Seed: 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		w.AddString(scaling.KeyString("key-", i), uint64(i))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	before := scaling.Identify(t, path)
	r, err := scaling.Open(path, &scaling.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{r.AddString("x", 1), r.Add(nil, 1), r.RemoveString(scaling.KeyString("key-", 1), 1), r.Flush()} {
		if !errors.Is(err, scaling.ErrReadOnly) {
			t.Fatalf("modification on a read-only handle: %v, want ErrReadOnly", err)
		}
	}
	for i := range 50 {
		if !r.ContainsString(scaling.KeyString("key-", i)) {
			t.Fatalf("read-only handle: key %d absent", i)
		}
	}
	if st := r.Stats(); st.Count != 50 || len(st.Filters) != 1 || st.Condition != scaling.Clean {
		t.Fatalf("read-only Stats: %d items, %d filters, %v", st.Count, len(st.Filters), st.Condition)
	}
	if after := scaling.Identify(t, path); after != before {
		t.Fatal("read-only handle changed the file")
	}

	// A writer opened beside it: the reader sees its adds, also in filters
	// appended after the reader opened.
	w, err = scaling.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 50; i < 400; i++ {
		if err := w.AddString(scaling.KeyString("key-", i), uint64(i)); err != nil {
			t.Fatal(err)
		}
		if !r.ContainsString(scaling.KeyString("key-", i)) {
			t.Fatalf("read-only handle misses key %d just added by the writer", i)
		}
	}
	if nw, nr := len(w.Stats().Filters), len(r.Stats().Filters); nw < 3 || nr != nw {
		t.Fatalf("writer has %d filters, reader %d", nw, nr)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestPersistClosed: every operation on a closed Filter fails with ErrClosed
// (Contains reports false), and Close is idempotent.
func TestPersistClosed(t *testing.T) {
	scaling.RequireFiles(t)
	path := filepath.Join(t.TempDir(), "closed.dbl")
	fw, err := scaling.Create(path, &scaling.Options{Capacity: 100, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	fw.AddString("k", 1)
	fw.Flush()
	fm, err := scaling.NewMemory(&scaling.Options{Capacity: 100, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	fm.AddString("k", 1)
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	fr, err := scaling.Open(path, &scaling.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]*scaling.Filter{"file": fw, "memory": fm, "read-only": fr} {
		t.Run(name, func(t *testing.T) {
			if name != "file" {
				if err := f.Close(); err != nil {
					t.Fatalf("Close: %v", err)
				}
			}
			if err := f.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			for op, err := range map[string]error{
				"Add": f.AddString("k", 1), "Add(nil)": f.Add(nil, 1), "Remove": f.RemoveString("k", 1),
				"RemoveBytes": f.Remove([]byte("k"), 1), "Flush": f.Flush(),
			} {
				if !errors.Is(err, scaling.ErrClosed) {
					t.Errorf("%s on a closed filter: %v, want ErrClosed", op, err)
				}
			}
			if f.ContainsString("k") || f.Contains([]byte("k")) {
				t.Error("Contains on a closed filter reported true")
			}
			if f.MemSeqnum() != 0 || f.DiskSeqnum() != 0 {
				t.Error("seqnums of a closed filter are not 0")
			}
			if st := f.Stats(); st.Count != 0 || len(st.Filters) != 0 {
				t.Errorf("Stats of a closed filter: %+v", st)
			}
			if err := f.Close(); err != nil {
				t.Fatalf("third Close: %v", err)
			}
		})
	}
}

// TestPersistEmptyKey: the empty key is a key like any other (the original's
// Go binding panicked on it), in every spelling and across a reopen, on a
// shared and an exclusive handle (whose straight path prefetches the
// key's first byte: none here).
func TestPersistEmptyKey(t *testing.T) {
	scaling.RequireFiles(t)
	for _, mode := range []scaling.StoreMode{scaling.InFile, scaling.InMemory} {
		for _, excl := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/exclusive=%v", mode, excl), func(t *testing.T) {
				testEmptyKey(t, mode, excl)
			})
		}
	}
}

func testEmptyKey(t *testing.T, mode scaling.StoreMode, excl bool) {
	f, path := scaling.NewStore(t, mode, &scaling.Options{Capacity: 100, Seed: 12, Exclusive: excl})
	if f.Contains(nil) || f.ContainsString("") {
		t.Fatal("empty key present in an empty filter")
	}
	if err := f.Add(nil, 1); err != nil {
		t.Fatal(err)
	}
	for _, ok := range []bool{f.Contains(nil), f.Contains([]byte{}), f.ContainsString("")} {
		if !ok {
			t.Fatal("empty key absent after Add(nil)")
		}
	}
	if err := f.AddString("", 2); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove([]byte{}, 1); err != nil {
		t.Fatal(err)
	}
	if !f.ContainsString("") {
		t.Fatal("empty key added twice, removed once: absent")
	}
	if mode == scaling.InFile {
		if err := f.Flush(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		g, err := scaling.Open(path, &scaling.OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		if !g.Contains(nil) {
			t.Fatal("empty key absent after reopen")
		}
		return
	}
	if err := f.RemoveString("", 2); err != nil {
		t.Fatal(err)
	}
	if f.Contains(nil) {
		t.Fatal("empty key present after removing both adds")
	}
	if err := f.Remove(nil, 2); !errors.Is(err, scaling.ErrNotPresent) {
		t.Fatalf("third Remove: %v, want ErrNotPresent", err)
	}
}

// TestPersistCreateExisting: Create refuses an existing path with ErrExists
// and leaves it alone, unless Overwrite; Open of a missing path is a plain
// not-exist error.
func TestPersistCreateExisting(t *testing.T) {
	scaling.RequireFiles(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "exists.dbl")
	f, err := scaling.Create(path, &scaling.Options{Capacity: 100, Seed: 13})
	if err != nil {
		t.Fatal(err)
	}
	f.AddString("old", 1)
	f.Flush()
	f.Close()
	before := scaling.Identify(t, path)
	if g, err := scaling.Create(path, &scaling.Options{Capacity: 100}); !errors.Is(err, scaling.ErrExists) {
		if g != nil {
			g.Close()
		}
		t.Fatalf("Create on an existing dablooms file: %v, want ErrExists", err)
	}
	other := filepath.Join(dir, "other.txt")
	os.WriteFile(other, []byte("not mine"), 0o644)
	if _, err := scaling.Create(other, nil); !errors.Is(err, scaling.ErrExists) {
		t.Fatalf("Create on an existing text file: %v, want ErrExists", err)
	}
	if b, _ := os.ReadFile(other); !bytes.Equal(b, []byte("not mine")) {
		t.Fatal("refused Create changed the existing file")
	}
	if after := scaling.Identify(t, path); after != before {
		t.Fatal("refused Create changed the existing file")
	}
	g, err := scaling.Create(path, &scaling.Options{Capacity: 100, Seed: 14, Overwrite: true})
	if err != nil {
		t.Fatalf("Create with Overwrite: %v", err)
	}
	if g.ContainsString("old") || g.MemSeqnum() != 0 || g.Params().Seed != 14 {
		t.Fatal("overwritten file still holds the old filter")
	}
	g.Close()
	if _, err := scaling.Open(filepath.Join(dir, "missing.dbl"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of a missing file: %v, want fs.ErrNotExist", err)
	}
}
