package scaling

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/failpoint"
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/mmapfile"
)

// Tests of issue 11: what other handles see while the chain grows, and
// files replaced or outgrown while open. Each names the item it pins.

// slack is header.Slack, short for the checks of the tests.
func slack(capacity uint64) uint64 { return header.Slack(capacity) }

func lifeKey(i int) []byte { return []byte(fmt.Sprintf("lc-%06d", i)) }

func createFile(t *testing.T, o *Options) (*Filter, string) {
	requireFiles(t)
	t.Helper()
	path := filepath.Join(t.TempDir(), "lc.dbl")
	f, err := Create(path, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, path
}

func openFile(t *testing.T, path string, o *OpenOptions) *Filter {
	requireFiles(t)
	t.Helper()
	f, err := Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// addRange adds keys [from, to) with their index as id.
func addRange(t *testing.T, f *Filter, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := f.Add(lifeKey(i), uint64(i)); err != nil {
			t.Fatalf("Add %d: %v", i, err)
		}
	}
}

// Item 1: a handle that refreshes while both metadata copies are being
// rewritten (another handle holds the growth lock) waits for the write and
// answers from the new directory; the old code turned the decode error
// into "absent".
func TestContainsWhileDirectoryIsRewritten(t *testing.T) {
	requireFiles(t)
	w, path := createFile(t, &Options{Capacity: 10, GrowthFactor: 1, Seed: 1})
	addRange(t, w, 0, 1)
	r := openFile(t, path, &OpenOptions{ReadOnly: true})
	addRange(t, w, 1, 25) // two growths r has not seen
	if n := len(w.Stats().Filters); n < 3 {
		t.Fatalf("%d filters, want 3", n)
	}

	// Play a writer in the middle of a metadata write: it holds the growth
	// lock and both copies are torn for 50 ms.
	raw, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if err := mmapfile.LockFile(raw, header.GrowthLockOffset, true, 0); err != nil {
		t.Fatal(err)
	}
	saved := make([]byte, 2*header.MetaSize)
	if _, err := raw.ReadAt(saved, 0); err != nil {
		t.Fatal(err)
	}
	torn := append([]byte(nil), saved...)
	torn[300] ^= 0xff
	torn[header.MetaSize+300] ^= 0xff
	if _, err := raw.WriteAt(torn, 0); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		raw.WriteAt(saved, 0)
		raw.Close()
	}()
	for _, i := range []int{0, 5, 24} {
		if !r.Contains(lifeKey(i)) {
			t.Fatalf("key %d: Contains = false while the directory was rewritten", i)
		}
	}
	if st := r.Stats(); len(st.Filters) < 3 || st.RefreshError != nil {
		t.Fatalf("reader has %d filters, refresh error %v", len(st.Filters), st.RefreshError)
	}
}

// Item 1, the last resort: a directory that stays unreadable (both copies
// damaged, nobody writing) makes Contains answer "maybe" (true), never
// "absent", and Stats says why.
func TestContainsOnUnreadableDirectory(t *testing.T) {
	requireFiles(t)
	w, path := createFile(t, &Options{Capacity: 10, GrowthFactor: 1, Seed: 1})
	r := openFile(t, path, &OpenOptions{ReadOnly: true})
	addRange(t, w, 0, 15) // a growth r has not seen
	raw, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.WriteAt([]byte{0xff}, 300)
	raw.WriteAt([]byte{0xff}, header.MetaSize+300)
	if !r.Contains([]byte("never added")) {
		t.Fatal("Contains = false although the new filters could not be mapped")
	}
	if st := r.Stats(); st.RefreshError == nil {
		t.Fatal("Stats().RefreshError = nil")
	}
}

// fsyncGate blocks the n-th fsync after it is armed until it is opened.
type fsyncGate struct {
	armed   atomic.Bool
	count   atomic.Int32
	n       int32
	reached chan struct{}
	open    chan struct{}
}

func newGate(n int32) *fsyncGate {
	return &fsyncGate{n: n, reached: make(chan struct{}), open: make(chan struct{})}
}

func (g *fsyncGate) fsync() error {
	if g.armed.Load() && g.count.Add(1) == g.n {
		close(g.reached)
		<-g.open
	}
	return nil
}

// Item 2: while a growth is half done (the directory lists the new filter,
// the count is not yet published), no handle routes an Add to the new
// filter: an Add that returned is found by a handle that is up to date with
// the published count. The old code's refresh loaded every listed filter.
func TestAddNeverLandsInUnpublishedFilter(t *testing.T) {
	requireFiles(t)
	gate := newGate(2) // the growth's second fsync: after metadata copy 1
	w, path := createFile(t, &Options{Capacity: 10, GrowthFactor: 1, Seed: 1, knobs: &testknobs.Knobs{Failpoints: &failpoint.Points{Fsync: gate.fsync}}})
	addRange(t, w, 0, 5)
	b := openFile(t, path, nil) // knows 1 filter
	addRange(t, w, 5, 15)       // 2 filters published
	c := openFile(t, path, &OpenOptions{ReadOnly: true})
	if !c.Contains(lifeKey(14)) {
		t.Fatal("setup: reader misses a key")
	}
	addRange(t, w, 15, 20) // filter 1 full
	gate.armed.Store(true)
	var opened sync.Once
	release := func() { opened.Do(func() { close(gate.open) }) }
	defer release() // a failed check must not leave w blocked (Close waits for it)
	grew := make(chan error, 1)
	go func() { grew <- w.Add(lifeKey(20), 20) }()
	select { // w holds the growth lock; the directory lists 3 filters, 2 published
	case <-gate.reached:
	case err := <-grew:
		t.Fatalf("the growth did not reach its second fsync (Add: %v)", err)
	}

	added := make(chan error, 1)
	go func() { added <- b.Add([]byte("late"), 1000) }()
	select {
	case err := <-added:
		if err != nil {
			t.Fatal(err)
		}
		if !c.Contains([]byte("late")) {
			t.Fatal("an Add returned during a half-done growth and a reader up to date with the published count misses it")
		}
		release()
	case <-time.After(200 * time.Millisecond):
		release() // b waits for the growth: right
		if err := <-added; err != nil {
			t.Fatal(err)
		}
	}
	if err := <-grew; err != nil {
		t.Fatal(err)
	}
	for _, h := range []*Filter{w, b, c} {
		if !h.Contains([]byte("late")) || !h.Contains(lifeKey(20)) {
			t.Fatal("a handle misses a key after the growth")
		}
	}
}

// Item 3: many goroutines adding while every first Add to a filter syncs
// its dirty mark (slow fsync) never overfill a filter: the old code's
// "full?" check and item increment were separate steps.
func TestManyGoroutinesNeverOverfill(t *testing.T) {
	requireFiles(t)
	slow := func() error { time.Sleep(200 * time.Microsecond); return nil }
	f, _ := createFile(t, &Options{Capacity: 20, GrowthFactor: 1.2, Seed: 1, knobs: &testknobs.Knobs{Failpoints: &failpoint.Points{Fsync: slow}}})
	var id atomic.Uint64
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for g := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5 {
				if err := f.Add(lifeKey(g*10+i), id.Add(1)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := f.Stats()
	total := uint64(0)
	for _, fs := range st.Filters {
		total += fs.Count
		if fs.Count > fs.Capacity+slack(fs.Capacity) {
			t.Errorf("filter %d holds %d items, capacity %d + slack %d", fs.Index, fs.Count, fs.Capacity, slack(fs.Capacity))
		}
	}
	if total != 1000 {
		t.Fatalf("%d items counted, want 1000", total)
	}
}

// Item 4: removes of a saturated key beyond its adds never drive the item
// count below zero, so the file still opens.
func TestSaturatedRemovesKeepCountAtZero(t *testing.T) {
	requireFiles(t)
	f, path := createFile(t, &Options{Seed: 1})
	key := []byte("hot")
	for range 16 {
		if err := f.Add(key, 1); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 18 {
		if err := f.Remove(key, 1); err != nil {
			t.Fatalf("remove %d: %v", i, err)
		}
	}
	if n := f.Stats().Filters[0].Count; n != 0 {
		t.Fatalf("item count %d (int64 %d), want 0", n, int64(n))
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	g := openFile(t, path, nil)
	if !g.Contains(key) {
		t.Fatal("a saturated key must stay present")
	}
}

// Item 5: a handle whose address reservation another handle outgrows keeps
// answering, for old and new filters, and can still add.
func TestHandleOutgrownReservation(t *testing.T) {
	requireFiles(t)
	w, path := createFile(t, &Options{Capacity: 100, GrowthFactor: 2, Seed: 1})
	addRange(t, w, 0, 10)
	fi, _ := os.Stat(path)
	r := openFile(t, path, &OpenOptions{ReadOnly: true, Reserve: fi.Size()})
	b := openFile(t, path, &OpenOptions{Reserve: fi.Size()})
	addRange(t, w, 10, 3000) // several growths, far past both reservations
	if fi2, _ := os.Stat(path); fi2.Size() <= fi.Size() {
		t.Fatalf("setup: file grew from %d to only %d bytes", fi.Size(), fi2.Size())
	}
	for _, i := range []int{0, 9, 500, 2999} {
		if !r.Contains(lifeKey(i)) || !b.Contains(lifeKey(i)) {
			t.Fatalf("key %d missing on a handle whose reservation was outgrown", i)
		}
	}
	if err := b.Add([]byte("from b"), 5000); err != nil {
		t.Fatalf("Add on an outgrown handle: %v", err)
	}
	if !r.Contains([]byte("from b")) {
		t.Fatal("reader misses b's Add")
	}
}

// Item 12: Create with Overwrite refuses while any handle, read-only
// included, has a file without FlagLiveReplace (version 1.2 and older) open;
// the open handles keep working on an intact file. After they close, the
// overwrite works. (Files with the flag are replaced while open:
// replace_test.go.)
func TestOverwriteRefusedWhileOpen(t *testing.T) {
	requireFiles(t)
	w, path := createFile(t, &Options{Seed: 1})
	addRange(t, w, 0, 100)
	w.Flush()
	w.Close()
	clearLiveReplace(t, path)
	r := openFile(t, path, &OpenOptions{ReadOnly: true})
	if _, err := Create(path, &Options{Overwrite: true}); !errors.Is(err, ErrBusy) {
		t.Fatalf("Create(Overwrite) with a reader open = %v, want ErrBusy", err)
	}
	for i := range 100 {
		if !r.Contains(lifeKey(i)) {
			t.Fatalf("key %d lost after a refused overwrite", i)
		}
	}
	r.Close()
	f, err := Create(path, &Options{Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Contains(lifeKey(1)) && f.Contains(lifeKey(2)) && f.Contains(lifeKey(3)) {
		t.Fatal("the overwritten file still holds the old keys")
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Fatalf("%d directory entries after the overwrite, want 1", len(ents))
	}
}

// Item 14: a schedule that ends before 64 filters (tightening 0.5, the
// original's) says so in Stats, and Add at the end returns ErrFull naming
// the reason instead of an option error.
func TestChainEndIsErrFull(t *testing.T) {
	f, err := NewMemory(&Options{Capacity: 1, GrowthFactor: 1, TighteningRatio: 0.5, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	limit := f.Stats().FilterLimit
	if limit >= header.MaxFilters || limit < 2 {
		t.Fatalf("FilterLimit = %d, want the schedule's end below %d", limit, header.MaxFilters)
	}
	var addErr error
	for i := 0; i < 100000 && addErr == nil; i++ {
		addErr = f.Add(lifeKey(i), uint64(i))
	}
	if !errors.Is(addErr, ErrFull) {
		t.Fatalf("Add at the chain's end = %v, want ErrFull", addErr)
	}
	// The error says what to do, not which option a schedule overran.
	if msg := addErr.Error(); !strings.Contains(msg, "RetireBefore") || strings.Contains(msg, "invalid option") {
		t.Fatalf("ErrFull says %q: want what to do (RetireBefore, Compact, a larger capacity)", msg)
	}
	if n := len(f.Stats().Filters); n != limit {
		t.Fatalf("chain ended at %d filters, FilterLimit said %d", n, limit)
	}
}

// A live writer that finishes its operation and closes while another
// handle looks at its slot is not a dead writer: Open and Condition must
// not call the file interrupted (the stress test saw "1 operation(s) of
// dead writers were cut short" with no process dead, about once in 30).
func TestWriterClosingIsNotDead(t *testing.T) {
	requireFiles(t)
	w, path := createFile(t, &Options{Seed: 1})
	addRange(t, w, 0, 10)
	op := &header.RecordAt(w.hot, w.slot, 0).Op
	idle := atomic.LoadUint64(op)
	var once sync.Once
	closing := func(int) {
		once.Do(func() {
			atomic.StoreUint64(op, idle) // the Add completes...
			w.Close()                    // ...and the writer closes
		})
	}
	r := openFile(t, path, &OpenOptions{ReadOnly: true, knobs: &testknobs.Knobs{SlotReadHook: closing}})
	atomic.StoreUint64(op, uint64(header.OpWord(idle).Begin(header.OpAdd, 0))) // an Add in flight
	if c := r.Condition(); c != Unflushed {
		t.Fatalf("Condition = %v while a live writer finished and closed, want unflushed", c)
	}
}
