package seqnum

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

func TestPackUnpack(t *testing.T) {
	for _, tc := range []struct {
		epoch uint64
		p     Phase
		word  uint64
	}{
		{0, Clean, 0}, {1, Clean, 4}, {1, Marking, 5}, {1, Dirty, 6}, {1, Flushing, 7},
		{12345, Dirty, 12345<<2 | 2}, {1<<62 - 1, Flushing, ^uint64(0)}, {1<<62 - 1, Clean, ^uint64(0) &^ 3},
	} {
		if w := Pack(tc.epoch, tc.p); w != tc.word {
			t.Errorf("Pack(%d, %v) = %#x, want %#x", tc.epoch, tc.p, w, tc.word)
		}
		if e, p := Unpack(tc.word); e != tc.epoch || p != tc.p {
			t.Errorf("Unpack(%#x) = %d, %v, want %d, %v", tc.word, e, p, tc.epoch, tc.p)
		}
	}
	names := map[Phase]string{Clean: "clean", Marking: "marking", Dirty: "dirty", Flushing: "flushing"}
	for p, want := range names {
		if p.String() != want {
			t.Errorf("Phase(%d).String() = %q, want %q", p, p.String(), want)
		}
	}
	if Pending != 1<<63 {
		t.Errorf("Pending = %#x", Pending)
	}
}

func TestWritable(t *testing.T) {
	for _, tc := range []struct {
		state, mark uint64
		want        bool
	}{
		{Pack(5, Dirty), 5, true},
		{Pack(5, Dirty), 4, false},
		{Pack(5, Dirty), 6, false},
		{Pack(5, Dirty), 5 | Pending, false},
		{Pack(5, Clean), 5, false},
		{Pack(5, Marking), 5, false},
		{Pack(5, Flushing), 5, false},
		{Pack(0, Dirty), 0, true},
	} {
		if got := Writable(tc.state, tc.mark); got != tc.want {
			e, p := Unpack(tc.state)
			t.Errorf("Writable(%d/%v, mark %#x) = %v, want %v", e, p, tc.mark, got, tc.want)
		}
	}
}

// fixture is the shared words of one file with a few filter marks.
type fixture struct {
	state, disk uint64
	marks       [4]uint64
	w           Words
	syncs       int
	onMarks     int
	syncErr     error
	duringSync  func()
}

func newFixture(epoch uint64, p Phase) *fixture {
	fx := &fixture{state: Pack(epoch, p)}
	fx.w = Words{State: &fx.state, Disk: &fx.disk}
	return fx
}

func (fx *fixture) sync() error {
	fx.syncs++
	if fx.duringSync != nil {
		fx.duringSync()
	}
	return fx.syncErr
}

func (fx *fixture) onMark() { fx.onMarks++ }

func (fx *fixture) mark(i int) error { return fx.w.MarkDirty(&fx.marks[i], fx.onMark, fx.sync) }

func (fx *fixture) expect(t *testing.T, epoch uint64, p Phase) {
	t.Helper()
	if e, ph := fx.w.Phase(); e != epoch || ph != p {
		t.Fatalf("phase %d/%v, want %d/%v", e, ph, epoch, p)
	}
}

func TestMarkDirtyFromClean(t *testing.T) {
	fx := newFixture(5, Clean)
	fx.disk = 42
	fx.marks[0] = 3 // marked in an older epoch
	if fx.w.DiskSeqnum() != 42 {
		t.Fatalf("DiskSeqnum = %d while clean, want 42", fx.w.DiskSeqnum())
	}
	// Dirty-first rule: when the mark is synced, it is already written,
	// disk_seqnum already 0, and nobody may write yet.
	fx.duringSync = func() {
		if e, p := fx.w.Phase(); e != 5 || p != Marking {
			t.Errorf("during sync: phase %d/%v, want 5/marking", e, p)
		}
		if fx.marks[0] != 5 || fx.disk != 0 || fx.onMarks != 1 {
			t.Errorf("during sync: mark %d disk %d onMark calls %d", fx.marks[0], fx.disk, fx.onMarks)
		}
		if Writable(fx.state, fx.marks[0]) {
			t.Error("writable before the mark is durable")
		}
	}
	if err := fx.mark(0); err != nil {
		t.Fatal(err)
	}
	if fx.syncs != 1 || fx.onMarks != 1 {
		t.Fatalf("sync called %d times, onMark %d times; want 1, 1", fx.syncs, fx.onMarks)
	}
	fx.expect(t, 5, Dirty)
	if fx.marks[0] != 5 || !Writable(fx.state, fx.marks[0]) {
		t.Fatalf("mark = %d, want 5 and writable", fx.marks[0])
	}
	if fx.w.DiskSeqnum() != 0 || fx.disk != 0 {
		t.Fatalf("disk_seqnum %d (word %d) after a dirty mark, want 0", fx.w.DiskSeqnum(), fx.disk)
	}

	// The same filter again: nothing to do.
	fx.duringSync = nil
	if err := fx.mark(0); err != nil || fx.syncs != 1 || fx.onMarks != 1 {
		t.Fatalf("second MarkDirty of the same filter: err %v, %d syncs, %d onMark", err, fx.syncs, fx.onMarks)
	}

	// Another filter: its own mark, made durable by one sync, no global mark.
	fx.duringSync = func() {
		if fx.marks[1] != 5|Pending {
			t.Errorf("during the filter's sync its mark is %#x, want epoch|Pending", fx.marks[1])
		}
		if Writable(fx.state, fx.marks[1]) {
			t.Error("filter writable before its mark is durable")
		}
	}
	if err := fx.mark(1); err != nil {
		t.Fatal(err)
	}
	if fx.syncs != 2 || fx.onMarks != 1 {
		t.Fatalf("MarkDirty of another filter: %d syncs (want 2), %d onMark (want 1)", fx.syncs, fx.onMarks)
	}
	if fx.marks[1] != 5 || fx.marks[0] != 5 {
		t.Fatalf("marks %v", fx.marks)
	}
	fx.expect(t, 5, Dirty)
}

func TestFlushHappyPath(t *testing.T) {
	fx := newFixture(5, Clean)
	if err := fx.mark(0); err != nil {
		t.Fatal(err)
	}
	ep, clean, ok := fx.w.BeginFlush()
	if ep != 5 || clean || !ok {
		t.Fatalf("BeginFlush = %d, %v, %v; want 5, false, true", ep, clean, ok)
	}
	fx.expect(t, 5, Flushing)
	if Writable(fx.state, fx.marks[0]) {
		t.Fatal("writable while flushing")
	}
	if fx.w.DiskSeqnum() != 0 {
		t.Fatal("disk_seqnum visible while flushing")
	}
	if !fx.w.EndFlush(ep, 77) {
		t.Fatal("EndFlush failed with no writer")
	}
	fx.expect(t, 6, Clean)
	if fx.w.DiskSeqnum() != 77 {
		t.Fatalf("DiskSeqnum = %d, want 77", fx.w.DiskSeqnum())
	}
	// The new epoch unmarks every filter: the next change marks again.
	if Writable(fx.state, fx.marks[0]) {
		t.Fatal("filter marked in the flushed epoch is still writable")
	}
	syncs := fx.syncs
	if err := fx.mark(0); err != nil || fx.syncs != syncs+1 || fx.marks[0] != 6 {
		t.Fatalf("MarkDirty after flush: err %v, syncs %d, mark %d", err, fx.syncs-syncs, fx.marks[0])
	}
	if fx.w.DiskSeqnum() != 0 {
		t.Fatal("disk_seqnum not cleared by the first change after a flush")
	}
	// A second flush of a clean file has nothing to do.
	if _, _, ok := fx.w.BeginFlush(); !ok {
		t.Fatal("BeginFlush of a dirty file refused")
	}
	fx.w.EndFlush(6, 80)
	if ep, clean, ok := fx.w.BeginFlush(); ep != 7 || !clean || ok {
		t.Fatalf("BeginFlush of a clean file = %d, %v, %v; want 7, true, false", ep, clean, ok)
	}
	fx.expect(t, 7, Clean)
}

func TestBeginFlushRefusals(t *testing.T) {
	for _, p := range []Phase{Marking, Flushing} {
		fx := newFixture(9, p)
		ep, clean, ok := fx.w.BeginFlush()
		if ep != 9 || clean || ok {
			t.Errorf("BeginFlush in %v = %d, %v, %v; want 9, false, false", p, ep, clean, ok)
		}
		fx.expect(t, 9, p)
	}
}

// TestTakeOverFlush: a flush that holds the flush lock takes over only a
// flushing phase (a killed flush's), and claims clean with it unless a
// writer re-marked the file after the takeover.
func TestTakeOverFlush(t *testing.T) {
	for _, p := range []Phase{Clean, Marking, Dirty} {
		fx := newFixture(9, p)
		if ep, ok := fx.w.TakeOverFlush(); ep != 9 || ok {
			t.Errorf("TakeOverFlush in %v = %d, %v; want 9, false", p, ep, ok)
		}
		fx.expect(t, 9, p)
	}
	fx := newFixture(9, Flushing)
	ep, ok := fx.w.TakeOverFlush()
	if ep != 9 || !ok {
		t.Fatalf("TakeOverFlush in flushing = %d, %v; want 9, true", ep, ok)
	}
	if !fx.w.EndFlush(ep, 7) {
		t.Fatal("EndFlush after the takeover refused")
	}
	fx.expect(t, 10, Clean)
	fx = newFixture(9, Flushing)
	ep, _ = fx.w.TakeOverFlush()
	if err := fx.mark(0); err != nil {
		t.Fatal(err)
	}
	if fx.w.EndFlush(ep, 7) {
		t.Fatal("EndFlush claimed clean over a writer's mark after the takeover")
	}
}

// TestWriterDuringFlush: a writer that marks while a flush syncs makes the
// flush unable to claim clean.
func TestWriterDuringFlush(t *testing.T) {
	fx := newFixture(5, Clean)
	fx.mark(0)
	ep, _, ok := fx.w.BeginFlush()
	if !ok {
		t.Fatal("BeginFlush refused")
	}
	// The writer finds the file frozen and marks it dirty again.
	if Writable(fx.state, fx.marks[0]) {
		t.Fatal("writable while flushing")
	}
	syncs := fx.syncs
	if err := fx.mark(0); err != nil {
		t.Fatal(err)
	}
	if fx.syncs != syncs+1 {
		t.Fatalf("marking during a flush synced %d times, want 1", fx.syncs-syncs)
	}
	fx.expect(t, 5, Dirty)
	if fx.w.EndFlush(ep, 123) {
		t.Fatal("EndFlush claimed clean though a writer marked during the flush")
	}
	fx.expect(t, 5, Dirty)
	if fx.w.DiskSeqnum() != 0 {
		t.Fatalf("DiskSeqnum = %d after a failed flush, want 0", fx.w.DiskSeqnum())
	}
	// The next flush succeeds.
	ep, _, ok = fx.w.BeginFlush()
	if !ok || !fx.w.EndFlush(ep, 124) || fx.w.DiskSeqnum() != 124 {
		t.Fatal("the next flush failed")
	}
}

func TestAbortFlush(t *testing.T) {
	fx := newFixture(5, Dirty)
	ep, _, _ := fx.w.BeginFlush()
	fx.w.AbortFlush(ep)
	fx.expect(t, 5, Dirty)
	// Harmless once a writer moved the phase on.
	ep, _, _ = fx.w.BeginFlush()
	fx.marks[0] = 5
	fx.mark(0) // Flushing -> Marking -> Dirty
	fx.state = Pack(5, Marking)
	fx.w.AbortFlush(ep)
	fx.expect(t, 5, Marking)
	// A stale epoch does nothing.
	fx.state = Pack(6, Flushing)
	fx.w.AbortFlush(5)
	fx.expect(t, 6, Flushing)
}

var errSync = errors.New("injected sync failure")

// TestSyncErrorThenTakeover: a writer whose mark sync fails leaves the
// phase at Marking (nobody may rely on the mark); another writer waits
// takeoverAfter, makes the mark durable itself, and goes on.
func TestSyncErrorThenTakeover(t *testing.T) {
	fx := newFixture(3, Clean)
	fx.w.takeover = 40 * time.Millisecond
	fx.disk = 10
	fx.syncErr = errSync
	if err := fx.mark(0); !errors.Is(err, errSync) {
		t.Fatalf("MarkDirty = %v, want the sync error", err)
	}
	fx.expect(t, 3, Marking)
	if fx.w.DiskSeqnum() != 0 {
		t.Fatal("disk_seqnum still claimed after a failed mark")
	}
	if Writable(fx.state, fx.marks[0]) {
		t.Fatal("writable after a failed mark")
	}
	if _, _, ok := fx.w.BeginFlush(); ok {
		t.Fatal("BeginFlush accepted a Marking phase")
	}
	fx.syncErr = nil
	syncs, start := fx.syncs, time.Now()
	if err := fx.mark(1); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < fx.w.takeover {
		t.Fatalf("took over after %v, before the takeover wait %v", el, fx.w.takeover)
	} else if el > fx.w.takeover+2*time.Second {
		t.Fatalf("took over only after %v", el)
	}
	if fx.syncs != syncs+1 {
		t.Fatalf("takeover synced %d times, want 1", fx.syncs-syncs)
	}
	fx.expect(t, 3, Dirty)
	if fx.marks[1] != 3 || !Writable(fx.state, fx.marks[1]) {
		t.Fatalf("taking-over writer's mark %#x", fx.marks[1])
	}
	if fx.marks[0] != 3 {
		t.Fatalf("first writer's mark %#x: its filter must stay marked (its sync may have half-happened)", fx.marks[0])
	}
}

// TestTakeoverSyncError: the writer taking over fails to sync too; the
// phase stays Marking.
func TestTakeoverSyncError(t *testing.T) {
	fx := newFixture(3, Marking)
	fx.w.takeover = 5 * time.Millisecond
	fx.syncErr = errSync
	if err := fx.mark(0); !errors.Is(err, errSync) {
		t.Fatalf("MarkDirty = %v", err)
	}
	fx.expect(t, 3, Marking)
}

// TestFilterMarkSyncError: in a dirty file, a filter whose mark fails to
// sync is left unmarked (its old mark restored).
func TestFilterMarkSyncError(t *testing.T) {
	fx := newFixture(8, Dirty)
	fx.marks[2] = 6
	fx.syncErr = errSync
	if err := fx.mark(2); !errors.Is(err, errSync) {
		t.Fatalf("MarkDirty = %v", err)
	}
	if fx.marks[2] != 6 {
		t.Fatalf("mark %#x after a failed sync, want the old 6", fx.marks[2])
	}
	fx.expect(t, 8, Dirty)
	fx.syncErr = nil
	if err := fx.mark(2); err != nil || fx.marks[2] != 8 {
		t.Fatalf("retry: %v, mark %#x", err, fx.marks[2])
	}
}

// TestPendingFilterMarkTakeover: a writer died while syncing a filter mark;
// the next writer of that filter waits takeoverAfter and completes it.
func TestPendingFilterMarkTakeover(t *testing.T) {
	fx := newFixture(8, Dirty)
	fx.w.takeover = 20 * time.Millisecond
	fx.marks[1] = 8 | Pending
	start := time.Now()
	if err := fx.mark(1); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < fx.w.takeover || fx.syncs != 1 || fx.marks[1] != 8 {
		t.Fatalf("after %v: %d syncs, mark %#x", time.Since(start), fx.syncs, fx.marks[1])
	}
}

// TestMarkingWaitsForMarker: a second writer does not take over while the
// first one's sync completes within takeoverAfter.
func TestMarkingWaitsForMarker(t *testing.T) {
	fx := newFixture(4, Clean)
	fx.w.takeover = time.Hour
	release := make(chan struct{})
	var second atomic.Int32
	var firstSyncs atomic.Int32
	done := make(chan error, 1)
	go func() {
		done <- fx.w.MarkDirty(&fx.marks[0], nil, func() error {
			firstSyncs.Add(1)
			<-release
			return nil
		})
	}()
	for {
		if _, p := fx.w.Phase(); p == Marking {
			break
		}
		time.Sleep(time.Millisecond)
	}
	done2 := make(chan error, 1)
	go func() {
		done2 <- fx.w.MarkDirty(&fx.marks[1], nil, func() error { second.Add(1); return nil })
	}()
	time.Sleep(30 * time.Millisecond)
	select {
	case err := <-done2:
		t.Fatalf("second writer returned (%v) while the mark was not durable", err)
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-done2; err != nil {
		t.Fatal(err)
	}
	// The second writer's filter needed its own mark in the new Dirty phase.
	if second.Load() != 1 || firstSyncs.Load() != 1 || fx.marks[1] != 4 {
		t.Fatalf("second writer synced %d times, first %d; mark %#x", second.Load(), firstSyncs.Load(), fx.marks[1])
	}
}

func TestDiskSeqnumOnlyWhenClean(t *testing.T) {
	for _, p := range []Phase{Clean, Marking, Dirty, Flushing} {
		fx := newFixture(2, p)
		fx.disk = 99
		want := uint64(0)
		if p == Clean {
			want = 99
		}
		if got := fx.w.DiskSeqnum(); got != want {
			t.Errorf("DiskSeqnum in %v = %d, want %d", p, got, want)
		}
	}
}

func TestMem(t *testing.T) {
	for _, tc := range []struct {
		c        []uint64
		inFlight bool
		want     uint64
	}{
		{nil, false, 0}, {[]uint64{1, 2, 3}, false, 6}, {[]uint64{1, 2, 3}, true, 0}, {[]uint64{0, 0}, false, 0},
		{[]uint64{1 << 40, 1 << 40}, false, 1 << 41},
	} {
		if got := Mem(tc.c, tc.inFlight); got != tc.want {
			t.Errorf("Mem(%v, %v) = %d, want %d", tc.c, tc.inFlight, got, tc.want)
		}
	}
}

func ExampleWords() {
	var state, disk, mark uint64
	w := Words{State: &state, Disk: &disk}
	state = Pack(1, Clean)
	sync := func() error { fmt.Println("sync"); return nil }

	// A writer makes the file dirty before its first change.
	if !Writable(state, mark) {
		w.MarkDirty(&mark, nil, sync)
	}
	fmt.Println(w.Phase())
	// ... change counters; completed modifications: 1 ...

	// A flush freezes writers, syncs, and claims clean.
	ep, _, ok := w.BeginFlush()
	fmt.Println(ok, w.EndFlush(ep, 1), w.DiskSeqnum())
	fmt.Println(w.Phase())
	// Output:
	// sync
	// 1 dirty
	// true true 1
	// 2 clean
}

// TestOnMarkBeforeMarking: onMark (which records the boot identity) runs
// before the phase leaves Clean or Flushing, so a reader that sees Marking
// already sees this boot's identity and cannot take the mark in progress
// for one left by an earlier boot.
func TestOnMarkBeforeMarking(t *testing.T) {
	for _, p := range []Phase{Clean, Flushing} {
		fx := newFixture(5, p)
		calls := 0
		onMark := func() {
			calls++
			if _, ph := fx.w.Phase(); ph != p {
				t.Errorf("from %v: onMark ran in phase %v", p, ph)
			}
		}
		if err := fx.w.MarkDirty(&fx.marks[0], onMark, fx.sync); err != nil {
			t.Fatal(err)
		}
		if calls != 1 {
			t.Errorf("from %v: onMark called %d times, want 1", p, calls)
		}
		fx.expect(t, 5, Dirty)
	}
}

// TestValidEpoch: a flush from any valid epoch must land on a valid epoch
// that Pack keeps (the fuzzer found a state word at 2^62-1 whose repair
// wrapped to epoch 0).
func TestValidEpoch(t *testing.T) {
	for _, c := range []struct {
		epoch uint64
		want  bool
	}{{0, false}, {1, true}, {2, true}, {MaxEpoch - 1, true}, {MaxEpoch, true}, {MaxEpoch + 1, false}, {1<<62 - 1, false}, {1 << 62, false}, {^uint64(0), false}} {
		if got := ValidEpoch(c.epoch); got != c.want {
			t.Errorf("ValidEpoch(%d) = %v, want %v", c.epoch, got, c.want)
		}
		if c.want {
			if ep, ph := Unpack(Pack(c.epoch+1, Clean)); ep != c.epoch+1 || ph != Clean {
				t.Errorf("Pack(%d+1) does not round-trip: epoch %d phase %v", c.epoch, ep, ph)
			}
		}
	}
}
